import { describe, expect, it } from "vitest";
import { ALICE, BOB, HASH } from "../test/fixtures";
import {
  describeEvent,
  eventRowsOf,
  foldBlockEvents,
  formatEvent,
  formatValue,
  isNoisy,
  visibleEvents,
  type ChainEventRow,
} from "./events";
import { UNIT } from "./units";

const ev = (pallet: string, name: string, fields: unknown, block = 12, index = 0): ChainEventRow => ({
  block,
  index,
  pallet,
  name,
  fields,
});

describe("chain events", () => {
  it("read System.Events records as rows", () => {
    const rows = eventRowsOf(7, [
      { event: { type: "System", value: { type: "ExtrinsicSuccess", value: { dispatch_info: {} } } } },
      { event: { type: "Jobs", value: { type: "JobStarted", value: { job: 2n } } } },
    ]);
    expect(rows).toEqual([
      { block: 7, index: 0, pallet: "System", name: "ExtrinsicSuccess", fields: { dispatch_info: {} } },
      { block: 7, index: 1, pallet: "Jobs", name: "JobStarted", fields: { job: 2n } },
    ]);
  });

  it("format Jobs events as one-liners", () => {
    expect(formatEvent(ev("Jobs", "JobCreated", { job: 3n, buyer: ALICE, budget: 151n * UNIT + UNIT / 2n }))).toBe(
      "#12 Jobs.JobCreated: job #3 by 5GrwvaEF…oHGKutQY, budget 151.5 GRID",
    );
    expect(formatEvent(ev("Jobs", "RewardPaid", { job: 3n, round: 2, who: BOB, amount: 30n * UNIT }, 40))).toBe(
      "#40 Jobs.RewardPaid: job #3 round 2: 30 GRID to 5FHneW46…jJM694ty",
    );
    expect(
      describeEvent(ev("Jobs", "RoundSettled", { job: 3n, round: 2, result_model_hash: HASH, paid: 30n * UNIT, fee: 3n * UNIT / 10n, refunded: 0n })),
    ).toBe("job #3 round 2 settled: paid 30 GRID, fee 0.3 GRID, refunded 0 GRID");
    expect(
      describeEvent(ev("Jobs", "RoundSettled", { job: 3n, round: 4, result_model_hash: undefined, paid: 0n, fee: 0n, refunded: 30n * UNIT })),
    ).toBe("job #3 round 4 settled without quorum: paid 0 GRID, fee 0 GRID, refunded 30 GRID");
    expect(describeEvent(ev("Jobs", "JobCancelled", { job: 5n, refunded: 151n * UNIT }))).toBe("job #5 cancelled, 151 GRID refunded");
    expect(describeEvent(ev("Jobs", "CancelScheduled", { job: 5n, round: 2 }))).toBe(
      "job #5 cancelled by its buyer: it ends when round 2 settles",
    );
    expect(describeEvent(ev("Jobs", "JobAbandoned", { job: 6n, refunded: 90n * UNIT }))).toBe(
      "job #6 abandoned (too few providers, or no quorum), 90 GRID refunded",
    );
    expect(describeEvent(ev("Jobs", "JobUnfilled", { job: 7n, refunded: 33n * UNIT }))).toBe(
      "job #7 never filled, 33 GRID refunded",
    );
    expect(describeEvent(ev("Providers", "Evicted", { who: BOB, by: BOB }))).toBe(
      "5FHneW46…jJM694ty lost its seat to 5FHneW46…jJM694ty, its stake released",
    );
    expect(describeEvent(ev("Jobs", "Removed", { job: 6n, who: BOB, reason: { type: "StakeShortfall", value: undefined } }))).toBe(
      "job #6: 5FHneW46…jJM694ty removed (StakeShortfall)",
    );
    expect(describeEvent(ev("Jobs", "RoundOpened", { job: 1n, round: 0, deadline: 120, members: 3 }))).toBe(
      "job #1 round 0 open until #120, 3 members",
    );
    expect(describeEvent(ev("Jobs", "Removed", { job: 1n, who: BOB, reason: { type: "MissedRounds", value: undefined } }))).toBe(
      "job #1: 5FHneW46…jJM694ty removed (MissedRounds)",
    );
    expect(describeEvent(ev("Jobs", "JobCompleted", { job: 1n, final_model_hash: HASH }))).toBe("job #1 completed (model 0xabababab…abababab)");
  });

  it("format a challenge's commit-reveal vote as one-liners", () => {
    expect(describeEvent(ev("Jobs", "ChallengeOpened", { id: 4n, job: 1n, round: 2, accused: BOB, challenger: ALICE, draw_at: 14, deadline: 40 }))).toBe(
      "challenge #4 on job #1 round 2: 5FHneW46…jJM694ty accused by 5GrwvaEF…oHGKutQY, committee drawn at #14, voting until #40",
    );
    expect(describeEvent(ev("Jobs", "CommitteeDrawn", { id: 4n, committee: [ALICE, BOB], reveal_from: 30 }))).toBe(
      "challenge #4: committee of 2 drawn, committing until #30",
    );
    expect(describeEvent(ev("Jobs", "VoteCommitted", { id: 4n, who: BOB }))).toBe("challenge #4: 5FHneW46…jJM694ty committed a hidden verdict");
    expect(describeEvent(ev("Jobs", "Voted", { id: 4n, who: BOB, verdict: { type: "Invalid", value: undefined } }))).toBe(
      "challenge #4: 5FHneW46…jJM694ty revealed Invalid",
    );
  });

  it("format the chain's random audit", () => {
    expect(describeEvent(ev("Jobs", "AuditOpened", { id: 5n, job: 1n, round: 2, accused: BOB, deadline: 60 }))).toBe(
      "audit #5 of job #1 round 2: 5FHneW46…jJM694ty's update, judged by a committee drawn now, voting until #60",
    );
  });

  it("format Providers events as one-liners", () => {
    expect(formatEvent(ev("Providers", "Registered", { who: BOB, peer_id: "0x0024cd", stake: 200n * UNIT }))).toBe(
      "#12 Providers.Registered: 5FHneW46…jJM694ty registered with 200 GRID",
    );
    expect(describeEvent(ev("Providers", "Bonded", { who: BOB, amount: 5n * UNIT }))).toBe("5FHneW46…jJM694ty bonded 5 GRID");
    expect(describeEvent(ev("Providers", "Unbonding", { who: BOB, amount: 5n * UNIT, unlock_at: 14_500 }))).toBe(
      "5FHneW46…jJM694ty unbonding 5 GRID, unlocks at #14500",
    );
    expect(
      describeEvent(ev("Providers", "Slashed", { who: BOB, reason: { type: "Liveness", value: undefined }, amount: 2n * UNIT, to_recipients: UNIT })),
    ).toBe("5FHneW46…jJM694ty slashed 2 GRID (Liveness), 1 GRID to recipients");
    expect(describeEvent(ev("Providers", "Probed", { who: BOB, ok: true, latency_ms: 12 }))).toBe("5FHneW46…jJM694ty probed: ok, 12 ms");
    expect(describeEvent(ev("Providers", "Probed", { who: BOB, ok: false, latency_ms: 0 }))).toBe("5FHneW46…jJM694ty probed: failed");
    expect(describeEvent(ev("Providers", "HealthChanged", { who: BOB, score: 600_000_000 }))).toBe("5FHneW46…jJM694ty health score 0.600");
  });

  it("fall back to the fields for unknown events", () => {
    expect(formatEvent(ev("Sudo", "Sudid", { sudo_result: { success: true, value: undefined } }))).toBe(
      "#12 Sudo.Sudid: sudo_result success true, value —",
    );
    expect(formatEvent(ev("Balances", "Withdraw", { who: ALICE, amount: UNIT / 1000n }))).toBe(
      "#12 Balances.Withdraw: who 5GrwvaEF…oHGKutQY, amount 0.001 GRID",
    );
    expect(formatEvent(ev("Grandpa", "Paused", undefined))).toBe("#12 Grandpa.Paused");
    expect(formatEvent(ev("Future", "Thing", { count: 4n, kind: { type: "Fast", value: 2 }, list: [1, 2, 3, 4, 5] }))).toBe(
      "#12 Future.Thing: count 4, kind Fast(2), list 5 items",
    );
    expect(formatValue(HASH)).toBe("0xabababab…abababab");
    expect(formatValue(new Uint8Array([1, 2]))).toBe("0x0102");
  });

  it("hide fee and extrinsic bookkeeping unless asked, newest first, capped", () => {
    expect(isNoisy({ pallet: "System", name: "ExtrinsicSuccess" })).toBe(true);
    expect(isNoisy({ pallet: "TransactionPayment", name: "TransactionFeePaid" })).toBe(true);
    expect(isNoisy({ pallet: "Balances", name: "Withdraw" })).toBe(true);
    expect(isNoisy({ pallet: "Balances", name: "BurnedDebt" })).toBe(true);
    expect(isNoisy({ pallet: "Balances", name: "Transfer" })).toBe(false);
    expect(isNoisy({ pallet: "Jobs", name: "JobCreated" })).toBe(false);

    const block = (n: number): ChainEventRow[] => [
      ev("Balances", "Withdraw", {}, n, 0),
      ev("Jobs", "JobCreated", { job: BigInt(n) }, n, 1),
      ev("System", "ExtrinsicSuccess", {}, n, 2),
    ];
    let rows: ChainEventRow[] = [];
    rows = foldBlockEvents(rows, { block: 1, hash: "0x1", events: block(1) });
    rows = foldBlockEvents(rows, { block: 2, hash: "0x2", events: block(2) });
    // The same block again (a re-emission) is not added twice.
    rows = foldBlockEvents(rows, { block: 2, hash: "0x2", events: block(2) });
    expect(rows.map((r) => `${r.block}.${r.index}`)).toEqual(["2.2", "2.1", "2.0", "1.2", "1.1", "1.0"]);
    expect(visibleEvents(rows, false).map((r) => `${r.pallet}.${r.name}#${r.block}`)).toEqual(["Jobs.JobCreated#2", "Jobs.JobCreated#1"]);
    expect(visibleEvents(rows, true)).toHaveLength(6);

    for (let n = 3; n <= 40; n++) rows = foldBlockEvents(rows, { block: n, hash: `0x${n}`, events: block(n) });
    expect(visibleEvents(rows, true)).toHaveLength(50);
    expect(visibleEvents(rows, true)[0]!.block).toBe(40);
    expect(visibleEvents(rows, false)).toHaveLength(40);
    expect(foldBlockEvents(rows, { block: 41, hash: "0x41", events: block(41) }, 10)).toHaveLength(10);
  });
});
