// The network view against a real node (skipped unless GRID_RPC is set): the whole <App/> in
// jsdom opened at #/network lists the providers' health (or its empty state), and a job posted
// as //Dave through the UI's chain source shows up in the live feed of finalized events as
// `Jobs.JobCreated` with its id and buyer. (//Dave, so as not to race the other node tests'
// //Alice and //Bob transactions for a nonce: vitest runs the files side by side.)
//   GRID_RPC=ws://127.0.0.1:9944 npm run test:node
import { act, render, screen, waitFor, within } from "@testing-library/react";
import { filter, firstValueFrom } from "rxjs";
import { afterAll, describe, expect, it } from "vitest";
import { App } from "../src/App";
import { devAccounts } from "../src/lib/accounts";
import { OPEN_ADMISSION } from "../src/lib/admission";
import { chainInfo, connect, jobConstants, type Connection } from "../src/lib/chain";
import { shortAddress } from "../src/lib/format";
import { chainSource } from "../src/lib/source";
import { buildJobSpec, DEFAULT_FORM } from "../src/lib/spec";
import { createdJobId, IDLE, nextTxState, type TxState } from "../src/lib/tx";

const rpc = process.env.GRID_RPC;

describe.skipIf(!rpc)("the network view against a dev node", () => {
  let conn: Connection;
  afterAll(() => conn?.disconnect());

  it("shows provider health and a posted job's JobCreated in the event feed", { timeout: 150_000 }, async () => {
    window.history.replaceState(null, "", `/?rpc=${encodeURIComponent(rpc!)}#/jobs`);
    const { unmount } = render(<App />);
    await screen.findByText("Connected", {}, { timeout: 20_000 });
    expect(screen.getByRole("link", { name: "Network" })).toHaveAttribute("href", "#/network");
    act(() => {
      window.location.hash = "#/network";
    });
    await screen.findByRole("heading", { level: 1, name: "Network" });
    const health = await screen.findByRole("region", { name: "Provider health" }, { timeout: 20_000 });
    expect(
      within(health).queryByRole("table") ?? within(health).getByText("No providers registered on this chain yet."),
    ).toBeInTheDocument();
    const feed = screen.getByRole("region", { name: "Recent events" });

    conn = connect(rpc!, () => undefined);
    const info = await chainInfo(conn.client);
    const dave = devAccounts(info.ss58Format)[3]!;
    const { limits } = await jobConstants(conn.api);
    const spec = buildJobSpec(DEFAULT_FORM, limits).spec!;
    let state: TxState = IDLE;
    const inBlock = await firstValueFrom(
      chainSource(conn.api)
        .createJob(spec, OPEN_ADMISSION, dave.signer)
        .pipe(
          filter((ev) => {
            state = nextTxState(state, ev);
            return (ev.type === "txBestBlocksState" && ev.found) || state.phase === "failed";
          }),
        ),
    );
    expect(state.phase).toBe("inBlock");
    if (inBlock.type !== "txBestBlocksState" || !inBlock.found) throw new Error("not in a block");
    const id = createdJobId(inBlock.events);
    expect(id).toBeDefined();

    // Once its block is finalized, the feed shows the event, newest first.
    const line = `Jobs.JobCreated: job #${id} by ${shortAddress(dave.address)}, budget`;
    const item = await waitFor(
      () => {
        const found = within(feed)
          .getAllByRole("listitem")
          .find((li) => li.textContent?.includes(line));
        expect(found).toBeDefined();
        return found!;
      },
      { timeout: 90_000 },
    );
    expect(item.textContent).toMatch(new RegExp(`^#${inBlock.block.number} Jobs\\.JobCreated: job #${id} by .+, budget 151\\.5 GRID$`));
    // Fee bookkeeping is hidden by default.
    expect(within(feed).queryByText(/TransactionPayment\./)).not.toBeInTheDocument();
    console.log(`the network view showed "${item.textContent}"`);
    unmount();
  });
});
