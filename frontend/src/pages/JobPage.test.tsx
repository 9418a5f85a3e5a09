import { act, render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import type { TxEvent } from "polkadot-api";
import { Subject } from "rxjs";
import { describe, expect, it, vi } from "vitest";
import type { Account } from "../lib/accounts";
import type { GridSource, JobEvent } from "../lib/source";
import { UNIT } from "../lib/units";
import { ALICE, BOB, CHARLIE, HASH, job, runningDetail } from "../test/fixtures";
import { JobPage } from "./JobPage";

function fakeSource() {
  const events = new Subject<JobEvent>();
  const cancel = new Subject<TxEvent>();
  const source: GridSource = {
    jobs: vi.fn(),
    job: vi.fn(async (id: bigint) =>
      id === 1n ? { job: job(1, { status: "Running", participants: 1 }), participants: [], rounds: [] } : undefined,
    ),
    constants: vi.fn(),
    free: vi.fn(),
    jobEvents: () => events,
    createJob: vi.fn(),
    cancelJob: vi.fn(() => cancel),
  };
  return { source, events, cancel };
}

const alice = { address: ALICE, name: "Alice", source: "dev", signer: {} } as Account;

describe("JobPage with a fake data source", () => {
  it("shows rounds and rewards from live events", async () => {
    const { source, events } = fakeSource();
    render(<JobPage source={source} id={1n} at="0xbest" rpcUrl="ws://x" />);
    expect(await screen.findByText("No round has settled yet.")).toBeInTheDocument();
    act(() => {
      events.next({ kind: "RewardPaid", block: 30, round: 0, who: BOB, amount: 30n * UNIT });
      events.next({ kind: "RoundSettled", block: 30, round: 0, resultModelHash: HASH, paid: 30n * UNIT, fee: 3n * UNIT / 10n, refunded: 0n });
    });
    const rounds = screen.getByRole("region", { name: "Rounds" });
    expect(rounds).toHaveTextContent("Round 0");
    expect(rounds).toHaveTextContent("settled in #30");
    expect(within(rounds).getByTitle(BOB).parentElement).toHaveTextContent("+30 GRID");
  });

  it("lets the buyer cancel and follows the transaction", async () => {
    const { source, cancel } = fakeSource();
    render(<JobPage source={source} id={1n} at="0xbest" rpcUrl="ws://x" account={alice} />);
    await userEvent.click(await screen.findByRole("button", { name: "Cancel job" }));
    expect(source.cancelJob).toHaveBeenCalledWith(1n, alice.signer);
    expect(screen.getByRole("status")).toHaveTextContent("Waiting for the signature");
    act(() => cancel.next({ type: "signed", txHash: "0x99" }));
    expect(screen.getByRole("status")).toHaveTextContent("Pending");
    act(() =>
      cancel.next({
        type: "finalized",
        txHash: "0x99",
        ok: false,
        events: [],
        block: { hash: "0xb", number: 41, index: 1 },
        dispatchError: { type: "Module", value: { type: "Jobs", value: { type: "JobEnded" } } },
      }),
    );
    expect(screen.getByRole("status")).toHaveTextContent("Failed #41");
    expect(screen.getByRole("status")).toHaveTextContent("Jobs.JobEnded: the job is completed or cancelled");
  });

  it("shows each participant's stake locked for the job and flags a short lock", async () => {
    const { source } = fakeSource();
    source.job = vi.fn(async () => runningDetail());
    render(<JobPage source={source} id={4n} at="0xbest" rpcUrl="ws://x" />);
    const participants = await screen.findByRole("region", { name: "Participants (3)" });
    const cells = (who: string) => within(participants).getByTitle(who).closest("tr")!.querySelectorAll("td");
    expect(cells(BOB)[4]).toHaveTextContent("6,000 GRID");
    expect(cells(CHARLIE)[4]).toHaveTextContent("5,000 GRID (below 6,000 GRID!)");
    expect(cells(CHARLIE)[4]).toHaveClass("warning");
    expect(within(participants).getByTestId("job-stake-locked")).toHaveTextContent("11,000 GRID");
    expect(source.job).toHaveBeenCalledWith(4n, "0xbest");
  });

  it("says when the job does not exist", async () => {
    render(<JobPage source={fakeSource().source} id={9n} at="0xbest" rpcUrl="ws://x" />);
    expect(await screen.findByRole("alert")).toHaveTextContent("There is no job #9 on this chain.");
  });
});
