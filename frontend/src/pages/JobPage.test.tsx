import { act, render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import type { TxEvent } from "polkadot-api";
import { Subject } from "rxjs";
import { describe, expect, it, vi } from "vitest";
import type { Account } from "../lib/accounts";
import type { GridSource, JobEvent } from "../lib/source";
import { UNIT } from "../lib/units";
import type { JobConstants } from "../lib/chain";
import { ALICE, BOB, CHARLIE, challengeDetail, HASH, job, runningDetail } from "../test/fixtures";
import { JobPage } from "./JobPage";

function fakeSource() {
  const events = new Subject<JobEvent>();
  const cancel = new Subject<TxEvent>();
  const challenge = new Subject<TxEvent>();
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
    challenge: vi.fn(() => challenge),
  };
  return { source, events, cancel, challenge };
}

const alice = { address: ALICE, name: "Alice", source: "dev", signer: {} } as Account;
const bob = { address: BOB, name: "Bob", source: "dev", signer: {} } as Account;

/** Only what the job page reads of the constants: a challenge's cost. */
const CONSTANTS = { challengeDeposit: 100n * UNIT, challengeFee: 10n * UNIT } as JobConstants;

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

  it("lets the buyer challenge a contribution in its window, states the cost and follows the transaction", async () => {
    const { source, challenge } = fakeSource();
    source.job = vi.fn(async () => challengeDetail());
    source.constants = vi.fn(async () => CONSTANTS);
    render(<JobPage source={source} id={5n} at="0xbest" now={40} rpcUrl="ws://x" account={alice} />);
    const section = await screen.findByRole("region", { name: "Challenge a contribution" });
    expect(await within(section).findByText(/deposit of 100 GRID on hold until the committee decides/)).toBeInTheDocument();
    expect(section).toHaveTextContent("a fee of 10 GRID that is not refunded");
    // Round 0's window closed at #36, Bob's round 1 is already challenged, round 2 is Alice's own for her.
    expect(within(section).queryByRole("button", { name: `Challenge round 0 by ${BOB}` })).not.toBeInTheDocument();
    expect(within(section).queryByRole("button", { name: `Challenge round 1 by ${BOB}` })).not.toBeInTheDocument();
    expect(within(section).queryByRole("button", { name: `Challenge round 2 by ${ALICE}` })).not.toBeInTheDocument();

    await userEvent.click(within(section).getByRole("button", { name: `Challenge round 1 by ${CHARLIE}` }));
    expect(source.challenge).toHaveBeenCalledExactlyOnceWith(5n, 1, CHARLIE, alice.signer);
    const status = within(section).getByRole("status");
    expect(status).toHaveTextContent("Challenge of round 1 by 5FLSigC9…1hXcS59Y: Waiting for the signature");
    expect(within(section).getByRole("button", { name: `Challenge round 2 by ${BOB}` })).toBeDisabled();
    act(() => challenge.next({ type: "signed", txHash: "0x98" }));
    expect(status).toHaveTextContent("Pending");
    act(() =>
      challenge.next({
        type: "finalized",
        txHash: "0x98",
        ok: false,
        events: [],
        block: { hash: "0xb", number: 47, index: 1 },
        dispatchError: { type: "Module", value: { type: "Jobs", value: { type: "ChallengeWindowClosed" } } },
      }),
    );
    expect(status).toHaveTextContent("Failed #47");
    expect(status).toHaveTextContent("Jobs.ChallengeWindowClosed: the job's challenge window for that round has passed");
    expect(within(section).getByRole("button", { name: `Challenge round 2 by ${BOB}` })).toBeEnabled();
  });

  it("offers no challenge to an account that is not the job's buyer, nor without an account", async () => {
    const { source } = fakeSource();
    source.job = vi.fn(async () => challengeDetail());
    const { rerender } = render(<JobPage source={source} id={5n} at="0xbest" now={40} rpcUrl="ws://x" account={bob} />);
    expect(await screen.findByRole("region", { name: "Rounds" })).toBeInTheDocument();
    expect(screen.queryByRole("region", { name: "Challenge a contribution" })).not.toBeInTheDocument();
    expect(screen.queryByRole("button", { name: /^Challenge/ })).not.toBeInTheDocument();
    rerender(<JobPage source={source} id={5n} at="0xbest" now={40} rpcUrl="ws://x" />);
    expect(screen.queryByRole("button", { name: /^Challenge/ })).not.toBeInTheDocument();
    // The buyer, on the same page, does get them.
    rerender(<JobPage source={source} id={5n} at="0xbest" now={40} rpcUrl="ws://x" account={alice} />);
    expect(screen.getAllByRole("button", { name: /^Challenge round/ })).toHaveLength(3);
    expect(source.challenge).not.toHaveBeenCalled();
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
