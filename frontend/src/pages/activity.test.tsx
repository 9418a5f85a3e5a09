// The job page's loss curve and challenges, and the provider page's earnings chart, with fake
// sources (no node, no trainer).
import { act, render, screen, waitFor, within } from "@testing-library/react";
import { NEVER, Subject } from "rxjs";
import { describe, expect, it, vi } from "vitest";
import type { ChainEventRow } from "../lib/events";
import type { ProviderSource, GridSource, JobEvent } from "../lib/source";
import { TrainerUnreachable } from "../lib/trainer";
import { UNIT } from "../lib/units";
import { fakeActivity, trainerStatus } from "../test/activity";
import { ALICE, BOB, CHARLIE, job, memberLock, provider } from "../test/fixtures";
import { JobPage } from "./JobPage";
import { ProviderPage } from "./ProviderPage";

function gridSource(status: "Running" | "Completed" = "Running") {
  return {
    job: vi.fn(async (id: bigint) =>
      id === 1n
        ? {
            job: job(1, {
              status,
              createdAt: 40,
              participants: 2,
              roundsSettled: 1,
              round: { index: 1, openedAt: 60, deadline: 68, members: [BOB, CHARLIE], attested: 1, joiners: 0 },
            }),
            participants: [
              { who: BOB, fromRound: 0, missedInRow: 0, roundsPaid: 1, earned: 30n * UNIT, lock: memberLock(1) },
              { who: CHARLIE, fromRound: 0, missedInRow: 0, roundsPaid: 1, earned: 30n * UNIT, lock: memberLock(1) },
            ],
            rounds: [{ round: 0, resultModelHash: `0x${"ab".repeat(32)}`, members: 2, proofs: 2, paidParticipants: 2, paid: 60n * UNIT, fee: UNIT, refunded: 0n, settledAt: 59 }],
          }
        : undefined,
    ),
    jobEvents: () => new Subject<JobEvent>(),
  } as unknown as GridSource;
}

const row = (block: number, index: number, pallet: string, name: string, fields: unknown): ChainEventRow => ({ block, index, pallet, name, fields });

describe("job page: loss curve, rounds, challenges", () => {
  it("draws losses from a trainer and the chain, lists an unreachable trainer, and shows challenges from state, history and live blocks", async () => {
    const { source: activity, blocks } = fakeActivity({
      endpoints: vi.fn(async () => new Map([[BOB, "http://bob:8090/health"], [CHARLIE, "http://charlie:8090/health"]])),
      trainerStatus: vi.fn(async (endpoint: string) => {
        if (endpoint.includes("bob")) return trainerStatus();
        throw new TrainerUnreachable("http://charlie:8090/status: Failed to fetch");
      }),
      roundProofs: vi.fn(async () => [{ round: 1, provider: BOB, trainLoss: 2.25 }]),
      challenges: vi.fn(async () => ({
        open: [{ id: 3n, job: 1n, round: 0, accused: CHARLIE, audit: false, challenger: ALICE, deposit: 10n * UNIT, drawAt: 62, committee: [{ who: BOB, ballot: "Revealed" as const, verdict: "Invalid" as const }], revealFrom: 70, deadline: 80 }],
        challenged: [
          { id: 2n, job: 1n, round: 0, accused: BOB },
          { id: 3n, job: 1n, round: 0, accused: CHARLIE },
        ],
      })),
      scan: vi.fn(async (from: number, to: number) => ({
        requested: { from, to },
        covered: { from: 50, to },
        stoppedAt: 49,
        pruned: true,
        truncated: false,
        reason: "State already discarded",
        events: [
          row(62, 1, "Providers", "Slashed", { who: BOB, reason: { type: "Fraud" }, amount: 4n * UNIT, to_recipients: UNIT }),
          row(62, 2, "Jobs", "ChallengeResolved", { id: 2n, job: 1n, round: 0, accused: BOB, outcome: { type: "FraudProven" }, slashed: 4n * UNIT, clawed_back: 30n * UNIT, absent: 0 }),
        ],
      })),
    });
    render(<JobPage source={gridSource()} activity={activity} id={1n} at="0xbest" now={64} rpcUrl="ws://x" />);

    const loss = await screen.findByRole("region", { name: "Loss curve" });
    await within(loss).findByRole("img", { name: "Loss per round of job #1" });
    await waitFor(() => expect(within(loss).getByRole("list", { name: "Legend" })).toHaveTextContent("eval loss, bob-gpu"));
    expect(within(loss).getByRole("list", { name: "Legend" })).toHaveTextContent("train loss, proofs on chain (mean)");
    await waitFor(() =>
      expect(within(loss).getByRole("list", { name: "Trainers" })).toHaveTextContent(
        "cannot use its status: http://charlie:8090/status: Failed to fetch",
      ),
    );
    expect(activity.endpoints).toHaveBeenCalledWith([BOB, CHARLIE], "0xbest");
    expect(activity.scan).toHaveBeenCalledWith(40, 100, expect.any(Function), expect.any(AbortSignal));

    const rounds = screen.getByRole("region", { name: "Rounds" });
    expect(within(rounds).getByRole("img")).toHaveAccessibleName(/1 settled, 1 with a quorum, 0 without; Round 1 open since #60, deadline #68 \(4 blocks left\)/);

    const challenges = screen.getByRole("region", { name: "Challenges, audits, votes and slashes" });
    expect(await within(challenges).findByRole("group", { name: "Challenge #3" })).toHaveTextContent(
      "revealing until #80 (16 blocks left). 1 invalid, 0 valid, 0 committed (hidden), 0 pending",
    );
    await waitFor(() => expect(challenges).toHaveTextContent("fraud proven"));
    expect(challenges).toHaveTextContent("Events from block #50 on; older state is pruned by this node");
    expect(within(challenges).getByRole("list", { name: "Challenge and slash events" })).toHaveTextContent("#62 Slashed");

    act(() =>
      blocks.next({
        block: 101,
        hash: "0x101",
        events: [
          row(101, 0, "Providers", "Slashed", { who: CHARLIE, reason: { type: "Equivocation" }, amount: UNIT, to_recipients: 0n }),
          row(101, 1, "Jobs", "EquivocationPunished", { job: 1n, round: 1, provider: CHARLIE, reporter: BOB, slashed: UNIT }),
          row(101, 2, "Jobs", "EquivocationPunished", { job: 9n, round: 1, provider: ALICE, reporter: BOB, slashed: UNIT }),
          row(101, 3, "Jobs", "CommitteeDrawn", { id: 3n, committee: [BOB], reveal_from: 70 }),
          row(101, 4, "Jobs", "VoteCommitted", { id: 3n, who: BOB }),
          row(101, 5, "Jobs", "Voted", { id: 3n, who: BOB, verdict: { type: "Invalid" } }),
          row(101, 6, "Jobs", "VoteCommitted", { id: 9n, who: ALICE }),
        ],
      }),
    );
    const items = within(challenges).getAllByRole("listitem").filter((li) => li.textContent?.startsWith("#"));
    expect(items.map((li) => li.textContent?.slice(0, 26))).toEqual([
      "#101 Voted: challenge #3: ",
      "#101 VoteCommitted: challe",
      "#101 CommitteeDrawn: chall",
      "#101 EquivocationPunished:",
      "#101 Slashed: 5FLSigC9…1hX",
      "#62 ChallengeResolved: cha",
      "#62 Slashed: 5FHneW46…jJM6",
    ]);

    // The chain audits Bob's update to round 1: the audit and its committee show up at once.
    act(() =>
      blocks.next({
        block: 102,
        hash: "0x102",
        events: [
          row(102, 0, "Jobs", "AuditOpened", { id: 4n, job: 1n, round: 1, accused: BOB, deadline: 122 }),
          row(102, 1, "Jobs", "CommitteeDrawn", { id: 4n, committee: [ALICE, CHARLIE], reveal_from: 114 }),
        ],
      }),
    );
    const feed = within(challenges).getByRole("list", { name: "Challenge and slash events" });
    const lines = within(feed).getAllByRole("listitem").map((li) => li.textContent);
    expect(lines.slice(0, 2)).toEqual([
      "#102 CommitteeDrawn: audit #4: committee of 2 drawn (5GrwvaEF…oHGKutQY, 5FLSigC9…1hXcS59Y), committing until #114",
      "#102 AuditOpened: audit #4 of round 1: 5FHneW46…jJM694ty's update, judged by a committee drawn now, voting until #122",
    ]);
    const all = within(challenges).getByRole("heading", { name: "Every challenge and audit of this job (3)" }).nextElementSibling as HTMLElement;
    expect(within(all).getAllByRole("row")[1]).toHaveTextContent(/^#41.*audit \(chain\)/);
  });

  it("still shows the job when the chain's extra reads fail and no trainer answers", async () => {
    const { source: activity } = fakeActivity({
      endpoints: vi.fn(async () => new Map([[BOB, "not a url"]])),
      challenges: vi.fn(async () => {
        throw new Error("storage gone");
      }),
      finalizedNumber: vi.fn(async () => {
        throw new Error("no finalized block");
      }),
      blockEvents: () => NEVER,
    });
    render(<JobPage source={gridSource("Completed")} activity={activity} id={1n} at="0xbest" rpcUrl="ws://x" />);
    expect(await screen.findByRole("heading", { name: /Job #1/ })).toBeInTheDocument();
    expect(await screen.findByText(/No losses yet/)).toBeInTheDocument();
    expect(await screen.findByRole("alert")).toHaveTextContent("Could not read the challenges: Error: storage gone");
    await waitFor(() => expect(screen.getByText(/No past events could be read: Error: no finalized block/)).toBeInTheDocument());
    // A completed job's proofs are not read (there is no open round).
    expect(activity.roundProofs).not.toHaveBeenCalled();
  });
});

describe("provider page: rewards and slashes over time", () => {
  it("charts rewards from state and slashes from the scan", async () => {
    const providers = {
      provider: vi.fn(async () => provider(BOB, { registeredAt: 7 })),
      providerJobs: vi.fn(async () => []),
      constants: vi.fn(async () => ({ minStake: 100n * UNIT, unbondingPeriod: 10, maxUnbondingChunks: 4 })),
      free: vi.fn(),
      events: () => NEVER,
    } as unknown as ProviderSource;
    const { source: activity } = fakeActivity({
      providerRewards: vi.fn(async () => [
        { job: 1n, round: 0, reward: 30n * UNIT, settledAt: 20 },
        { job: 1n, round: 1, reward: 30n * UNIT, settledAt: 28 },
      ]),
      scan: vi.fn(async (from: number, to: number) => ({
        requested: { from, to },
        covered: { from, to },
        pruned: false,
        truncated: false,
        events: [row(25, 0, "Providers", "Slashed", { who: BOB, reason: { type: "Liveness" }, amount: 3n * UNIT, to_recipients: 0n })],
      })),
    });
    render(<ProviderPage source={providers} activity={activity} who={BOB} at="0xbest" now={30} />);
    const section = await screen.findByRole("region", { name: "Rewards and slashes over time" });
    await waitFor(() => expect(section).toHaveTextContent("Rewarded 60 GRID for 2 contributions; slashed 3 GRID in 1 slash."));
    expect(activity.scan).toHaveBeenCalledWith(7, 100, expect.any(Function), expect.any(AbortSignal));
    expect(within(section).getByRole("img", { name: /Cumulative rewards and slashes/ })).toBeInTheDocument();
    expect(section).toHaveTextContent("Events from block #7 on.");
  });
});
