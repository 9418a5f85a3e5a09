import { act, render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { Subject } from "rxjs";
import { describe, expect, it, vi } from "vitest";
import type { BlockEvents } from "../lib/events";
import type { NetworkSource } from "../lib/source";
import { UNIT } from "../lib/units";
import { ALICE, BOB, CHARLIE, provider } from "../test/fixtures";
import { NetworkPage } from "./NetworkPage";

function fakeSource(rows = [
  provider(ALICE, { score: 400_000_000, health: { roundsDelivered: 2, roundsMissed: 3, challengesLost: 1, probesOk: 1, probesFailed: 4 } }),
  provider(BOB, { activeJobs: 1, stake: 300n * UNIT, health: { roundsDelivered: 9, roundsMissed: 0, challengesLost: 0, probesOk: 7, probesFailed: 0 } }),
  provider(CHARLIE, { score: 750_000_000 }),
]) {
  const blocks = new Subject<BlockEvents>();
  const source: NetworkSource = {
    providers: vi.fn(async () => rows),
    blockEvents: () => blocks,
  };
  return { source, blocks };
}

describe("NetworkPage with a fake data source", () => {
  it("lists providers' health by score with a bar each", async () => {
    const { source } = fakeSource();
    render(<NetworkPage source={source} at="0xbest" />);
    expect(screen.getByRole("heading", { level: 1, name: "Network" })).toBeInTheDocument();
    const table = await screen.findByRole("table", { name: "3 providers, by health score" });
    const body = within(table).getAllByRole("row").slice(1);
    expect(body.map((r) => within(r).getByRole("link").getAttribute("href"))).toEqual([
      `#/providers/${BOB}`,
      `#/providers/${CHARLIE}`,
      `#/providers/${ALICE}`,
    ]);
    expect(body[0]).toHaveTextContent("In job");
    expect(body[0]).toHaveTextContent("300 GRID");
    expect(body[0]).toHaveTextContent("9 / 0");
    expect(body[0]).toHaveTextContent("7 / 0");
    expect(within(body[0]!).getByTestId("score")).toHaveTextContent("1.000");
    expect(body[2]).toHaveTextContent("Idle");
    expect(body[2]).toHaveTextContent("2 / 3");
    expect(body[2]).toHaveTextContent("1 / 4");
    expect(within(body[2]!).getByTestId("score")).toHaveTextContent("0.400");
    // The bar is as long as the score: 0.4 of 64 px.
    const fill = within(body[2]!).getByTestId("score").querySelector(".score-fill");
    expect(fill).toHaveAttribute("width", "26");
    expect(source.providers).toHaveBeenCalledWith("0xbest");
  });

  it("has an empty state", async () => {
    render(<NetworkPage source={fakeSource([]).source} at="0xbest" />);
    expect(await screen.findByText("No providers registered on this chain yet.")).toBeInTheDocument();
    expect(screen.queryByRole("table")).not.toBeInTheDocument();
  });

  it("feeds finalized blocks' events, newest first, bookkeeping only on request", async () => {
    const { source, blocks } = fakeSource();
    render(<NetworkPage source={source} at="0xbest" />);
    await screen.findByRole("table");
    const feed = screen.getByRole("region", { name: "Recent events" });
    expect(feed).toHaveTextContent("No events yet.");
    act(() => {
      blocks.next({
        block: 30,
        hash: "0x30",
        events: [
          { block: 30, index: 0, pallet: "Balances", name: "Withdraw", fields: { who: ALICE, amount: UNIT / 100n } },
          { block: 30, index: 1, pallet: "Jobs", name: "JobCreated", fields: { job: 4n, buyer: ALICE, budget: 151n * UNIT } },
          { block: 30, index: 2, pallet: "System", name: "ExtrinsicSuccess", fields: { dispatch_info: {} } },
        ],
      });
      blocks.next({
        block: 31,
        hash: "0x31",
        events: [{ block: 31, index: 0, pallet: "Providers", name: "Bonded", fields: { who: BOB, amount: 5n * UNIT } }],
      });
    });
    let items = within(feed).getAllByRole("listitem");
    expect(items.map((i) => i.textContent)).toEqual([
      "#31 Providers.Bonded: 5FHneW46…jJM694ty bonded 5 GRID",
      "#30 Jobs.JobCreated: job #4 by 5GrwvaEF…oHGKutQY, budget 151 GRID",
    ]);
    await userEvent.click(within(feed).getByLabelText("show all events"));
    items = within(feed).getAllByRole("listitem");
    expect(items).toHaveLength(4);
    expect(items[1]).toHaveTextContent("#30 System.ExtrinsicSuccess");
    expect(items[3]).toHaveTextContent("#30 Balances.Withdraw: who 5GrwvaEF…oHGKutQY, amount 0.01 GRID");
  });

  it("starts the feed with the events of blocks finalized before it opened", async () => {
    const { source, blocks } = fakeSource();
    const past = (block: number, index: number, job: bigint) => ({
      block,
      index,
      pallet: "Jobs",
      name: "JobCreated",
      fields: { job, buyer: ALICE, budget: 10n * UNIT },
    });
    source.pastEvents = vi.fn(async (n: number) => ({
      requested: { from: 22 - n, to: 21 },
      covered: { from: 20, to: 21 },
      stoppedAt: 19,
      reason: "State already discarded",
      pruned: true,
      truncated: false,
      events: [past(20, 1, 1n), past(21, 0, 2n)],
    }));
    render(<NetworkPage source={source} at="0xbest" />);
    const feed = screen.getByRole("region", { name: "Recent events" });
    await waitFor(() => expect(feed).toHaveTextContent("job #1 by"));
    expect(feed).toHaveTextContent("Events from block #20 on; older state is pruned by this node");
    expect(source.pastEvents).toHaveBeenCalledWith(100);
    // A live block the scan read already is not shown twice; a new one goes on top.
    act(() => {
      blocks.next({ block: 21, hash: "0x21", events: [past(21, 0, 2n)] });
      blocks.next({ block: 22, hash: "0x22", events: [past(22, 0, 3n)] });
    });
    expect(within(feed).getAllByRole("listitem").map((i) => i.textContent?.slice(0, 3))).toEqual(["#22", "#21", "#20"]);
  });

  it("says when past blocks cannot be read, and still feeds new ones", async () => {
    const { source, blocks } = fakeSource();
    source.pastEvents = vi.fn(async () => {
      throw new Error("connection lost");
    });
    render(<NetworkPage source={source} at="0xbest" />);
    const feed = screen.getByRole("region", { name: "Recent events" });
    expect(await within(feed).findByText(/Past blocks could not be read: connection lost/)).toBeInTheDocument();
    act(() => blocks.next({ block: 5, hash: "0x5", events: [{ block: 5, index: 0, pallet: "Providers", name: "Bonded", fields: { who: BOB, amount: UNIT } }] }));
    expect(within(feed).getAllByRole("listitem")).toHaveLength(1);
  });

  it("says when the providers cannot be read", async () => {
    const { source } = fakeSource();
    source.providers = vi.fn(async () => {
      throw new Error("view function missing");
    });
    render(<NetworkPage source={source} at="0xbest" />);
    expect(await screen.findByRole("alert")).toHaveTextContent("Could not read providers: Error: view function missing");
  });
});
