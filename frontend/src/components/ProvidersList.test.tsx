import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { UNIT } from "../lib/units";
import { ALICE, BOB, CHARLIE, provider } from "../test/fixtures";
import { ProvidersList } from "./ProvidersList";

describe("ProvidersList", () => {
  const rows = [
    provider(ALICE, { stake: 100n * UNIT, score: 500_000_000 }),
    provider(BOB, { stake: 300n * UNIT, unbonding: [{ amount: 5n * UNIT, unlockAt: 99 }] }),
    provider(CHARLIE, { stake: 200n * UNIT, capabilities: { ...provider(CHARLIE).capabilities, tflopsMilli: 9_000 } }),
  ];

  it("lists providers by stake with their hardware, score and endpoint", () => {
    render(<ProvidersList providers={rows} />);
    const table = screen.getByRole("table", { name: "3 providers, by stake" });
    const body = within(table).getAllByRole("row").slice(1);
    expect(body.map((r) => within(r).getByRole("link").getAttribute("href"))).toEqual([
      `#/providers/${BOB}`,
      `#/providers/${CHARLIE}`,
      `#/providers/${ALICE}`,
    ]);
    expect(body[0]).toHaveTextContent("300 GRID");
    expect(body[0]).toHaveTextContent("5 GRID");
    expect(body[0]).toHaveTextContent("0.15 TFLOP/s");
    expect(body[0]).toHaveTextContent("1 × x86_64 2-core (Cpu, 24 GiB), 1000 Mbit/s");
    expect(body[0]).toHaveTextContent("http://127.0.0.1:8090");
    expect(body[2]).toHaveTextContent("0.500");
  });

  it("reorders by throughput", async () => {
    render(<ProvidersList providers={rows} />);
    await userEvent.selectOptions(screen.getByLabelText("Order by"), "tflops");
    const first = screen.getAllByRole("row")[1]!;
    expect(within(first).getByRole("link")).toHaveAttribute("title", CHARLIE);
    expect(screen.getByRole("table", { name: "3 providers, by tflop/s" })).toBeInTheDocument();
  });

  it("has an empty state", () => {
    render(<ProvidersList providers={[]} />);
    expect(screen.getByText("No providers registered on this chain yet.")).toBeInTheDocument();
    expect(screen.queryByRole("table")).not.toBeInTheDocument();
  });
});
