// The whole app, rendered in jsdom (whose WebSocket is real), against a real node: skipped
// unless GRID_RPC is set. Not a browser test (that is e2e/run.mjs, `npm run test:e2e`),
// but it drives the same components, hooks and chain code the browser runs.
//   GRID_RPC=ws://127.0.0.1:9944 npx vitest run tests/app-devnode.test.tsx
import { act, render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { App } from "../src/App";

const rpc = process.env.GRID_RPC;

describe.skipIf(!rpc)("the app against a dev node", () => {
  it("connects, follows blocks, posts a job as //Alice, shows it and cancels it", { timeout: 120_000 }, async () => {
    window.history.replaceState(null, "", `/?rpc=${encodeURIComponent(rpc!)}#/create`);
    const { unmount } = render(<App />);
    await screen.findByText("Connected", {}, { timeout: 20_000 });
    await waitFor(() => expect(screen.getByTestId("best")).toHaveTextContent(/#\d+/), { timeout: 20_000 });
    await waitFor(() => expect(screen.getByLabelText("Account")).toHaveDisplayValue(/^Alice \(dev\)/), { timeout: 20_000 });
    await waitFor(() => expect(screen.getByTestId("escrow-total")).toHaveTextContent("151.5 GRID"), { timeout: 20_000 });

    await userEvent.click(screen.getByRole("button", { name: "Sign and post job" }));
    const form = screen.getByRole("form", { name: "Post a training job" });
    await waitFor(() => expect(within(form).getByRole("status")).toHaveTextContent(/In block #\d+|Finalized/), { timeout: 60_000 });
    const link = await within(form).findByRole("link", { name: /^job #\d+$/ });
    const id = link.textContent!.replace("job #", "");

    act(() => {
      window.location.hash = `#/jobs/${id}`;
    });
    await screen.findByRole("heading", { level: 1, name: new RegExp(`Job #${id}`) }, { timeout: 20_000 });
    expect(screen.getByRole("region", { name: "Escrow" })).toHaveTextContent("Still held151.5 GRID");
    await userEvent.click(screen.getByRole("button", { name: "Cancel job" }));
    await waitFor(() => expect(screen.getByRole("status")).toHaveTextContent(/Cancel: (In block|Finalized) #\d+/), {
      timeout: 60_000,
    });
    await waitFor(() => expect(screen.getByRole("heading", { level: 1 })).toHaveTextContent("Cancelled"), { timeout: 20_000 });
    expect(screen.getByRole("region", { name: "Escrow" })).toHaveTextContent("Refunded151.5 GRID");

    act(() => {
      window.location.hash = "#/jobs";
    });
    const row = await screen.findByRole("link", { name: `#${id}` }, { timeout: 20_000 });
    expect(row.closest("tr")).toHaveTextContent("Cancelled");
    console.log(`the app posted job #${id}, cancelled it and lists it`);
    unmount();
  });
});
