// Reading a job's detail from mocked view functions (no node), and judging its members' locks.
import { describe, expect, it, vi } from "vitest";
import { ALICE, BOB, CHARLIE, job, memberLock, SPEC } from "../test/fixtures";
import { OPEN_ADMISSION } from "./admission";
import type { GridApi } from "./chain";
import { canChallenge, contributionsInWindow, loadJobDetail, loadJobs, lockProblem, stakeLocked, type JobParticipantRow, type RoundRow } from "./jobs";
import { UNIT } from "./units";

const MIN = SPEC.min_provider_stake;
const member = { type: "Member", value: undefined };

/** A provider record as `Providers.provider` returns it; only its locks matter here. */
const providerView = (jobs: unknown[]) => ({ provider: { jobs }, health: {}, locked: 0n, score: 0 });

/** Contributions (`Contributions`) and the challenges of them (`Challenged`) by round, as storage entries. */
type RoundEntries = Record<number, { paid: [string, bigint][]; challenged?: [string, bigint][] }>;

/**
 * An api whose job, participants, round and provider views answer from plain data, at block
 * `number` (`System.Number`), with `settled` rounds (round r settled at block 20 + r) and the
 * `entries` of each.
 */
function fakeApi(providers: Record<string, unknown>, { number = 30, settled = 1, entries = {} as RoundEntries } = {}) {
  const view = {
    Jobs: {
      job: vi.fn(async (id: bigint) =>
        id === 4n
          ? {
              job: {
                buyer: ALICE,
                status: { type: "Running", value: undefined },
                spec: SPEC,
                created_at: 10,
                participants: 3,
                rounds_settled: settled,
                funded: 150n * UNIT,
                paid: 30n * UNIT,
                fees: 0n,
                refunded: 0n,
                clawed_back: 0n,
                cancel_requested: false,
              },
              held: 120n * UNIT,
              admission: OPEN_ADMISSION,
            }
          : undefined,
      ),
      participants: vi.fn(async () =>
        [BOB, CHARLIE, ALICE].map((who) => [who, { from_round: 0, missed_in_row: 0, rounds_paid: 1, earned: 10n * UNIT }]),
      ),
      round_result: vi.fn(async (_id: bigint, round: number) => ({
        result_model_hash: undefined,
        members: 3,
        proofs: 3,
        paid_participants: 3,
        paid: 30n * UNIT,
        fee: 0n,
        refunded: 0n,
        settled_at: 20 + round,
      })),
    },
    Providers: { provider: vi.fn(async (who: string) => providers[who]) },
  };
  const entriesOf = (pick: (r: RoundEntries[number]) => [string, bigint][], value: (v: bigint) => unknown) =>
    vi.fn(async ([job, round]: [bigint, number]) =>
      (entries[round] ? pick(entries[round]) : []).map(([who, v]) => ({ keyArgs: [[job, round], who], value: value(v) })),
    );
  const query = {
    System: { Number: { getValue: vi.fn(async () => number) } },
    Jobs: {
      Contributions: { getEntries: entriesOf((r) => r.paid, (reward) => ({ reward })) },
      Challenged: { getEntries: entriesOf((r) => r.challenged ?? [], (id) => id) },
    },
  };
  return { api: { view, query } as unknown as GridApi, view, query };
}

describe("loadJobDetail", () => {
  it("reads each participant's lock for the job from its provider record, at the same block", async () => {
    const { api, view } = fakeApi({
      // Bob's record also locks stake for another job, listed first: only job 4's counts.
      [BOB]: providerView([
        { job: 2n, amount: 50n * UNIT, state: { type: "Until", value: 70 }, disputes: 1 },
        { job: 4n, amount: MIN, state: member, disputes: 0 },
      ]),
      [CHARLIE]: providerView([{ job: 4n, amount: MIN - 1_000n * UNIT, state: member, disputes: 0 }]),
      // Alice is not registered at all: no record, so no lock.
    });
    const detail = await loadJobDetail(api, 4n, "0xabc");
    expect(detail?.participants).toEqual([
      { who: BOB, fromRound: 0, missedInRow: 0, roundsPaid: 1, earned: 10n * UNIT, lock: memberLock(4) },
      { who: CHARLIE, fromRound: 0, missedInRow: 0, roundsPaid: 1, earned: 10n * UNIT, lock: memberLock(4, { amount: MIN - 1_000n * UNIT }) },
      { who: ALICE, fromRound: 0, missedInRow: 0, roundsPaid: 1, earned: 10n * UNIT, lock: undefined },
    ]);
    expect(detail?.participants[0]!.lock).not.toHaveProperty("until");
    expect(view.Providers.provider.mock.calls).toEqual([
      [BOB, { at: "0xabc" }],
      [CHARLIE, { at: "0xabc" }],
      [ALICE, { at: "0xabc" }],
    ]);
    expect(detail?.rounds).toMatchObject([{ round: 0, paid: 30n * UNIT, settledAt: 20 }]);
    expect(detail && detail.participants.map((p) => lockProblem(detail.job, p.lock))).toEqual([undefined, "short", "missing"]);
    expect(stakeLocked(detail!.participants)).toBe(2n * MIN - 1_000n * UNIT);
  });

  it("reads the contributions of the rounds still in their challenge window, each with its challenge, at the same block", async () => {
    // Rounds 0–3 settled at 20–23; the window is 16 blocks: at #37 round 0 (closed at #36) is out.
    const { api, query } = fakeApi(
      {},
      {
        number: 37,
        settled: 4,
        entries: {
          0: { paid: [[BOB, 10n * UNIT]] },
          2: { paid: [[CHARLIE, 0n], [BOB, 10n * UNIT]], challenged: [[BOB, 7n]] },
        },
      },
    );
    const detail = await loadJobDetail(api, 4n, "0xabc");
    expect(query.System.Number.getValue).toHaveBeenCalledWith({ at: "0xabc" });
    expect(detail?.rounds.map((r) => [r.round, r.settledAt, r.contributions])).toEqual([
      [0, 20, undefined],
      [1, 21, []],
      [2, 22, [{ who: BOB, reward: 10n * UNIT, challenged: 7n }, { who: CHARLIE, reward: 0n }]],
      [3, 23, []],
    ]);
    expect(query.Jobs.Contributions.getEntries.mock.calls.map(([key]) => key[1]).sort()).toEqual([1, 2, 3]);
    expect(query.Jobs.Contributions.getEntries).toHaveBeenCalledWith([4n, 2], { at: "0xabc" });
    expect(query.Jobs.Challenged.getEntries).toHaveBeenCalledWith([4n, 2], { at: "0xabc" });
  });

  it("reads no provider for a job that does not exist", async () => {
    const { api, view } = fakeApi({});
    expect(await loadJobDetail(api, 9n)).toBeUndefined();
    expect(view.Providers.provider).not.toHaveBeenCalled();
  });
});

describe("participants' locks", () => {
  const running = job(4, { status: "Running" });

  it("must be a member's lock of at least the spec's minimum while the job is live", () => {
    expect(lockProblem(running, memberLock(4))).toBeUndefined();
    expect(lockProblem(running, memberLock(4, { amount: MIN + 1n }))).toBeUndefined();
    expect(lockProblem(running, memberLock(4, { amount: MIN - 1n }))).toBe("short");
    expect(lockProblem(running, undefined)).toBe("missing");
    // A lock lasting until a block is what a leaver keeps, not a member's.
    expect(lockProblem(running, memberLock(4, { until: 90 }))).toBe("missing");
    expect(lockProblem(job(4, { status: "Open" }), undefined)).toBe("missing");
  });

  it("are expected of no one once the job ended", () => {
    for (const status of ["Completed", "Cancelled"] as const) {
      expect(lockProblem(job(4, { status }), undefined)).toBeUndefined();
      expect(lockProblem(job(4, { status }), memberLock(4, { until: 90 }))).toBeUndefined();
    }
  });

  it("add up to what binds at a block: a lapsed lock counts no more, one with an open dispute still does", () => {
    const p = (lock: JobParticipantRow["lock"]): JobParticipantRow => ({ who: BOB, fromRound: 0, missedInRow: 0, roundsPaid: 0, earned: 0n, lock });
    const rows = [p(memberLock(4)), p(memberLock(4, { until: 90 })), p(memberLock(4, { until: 50, disputes: 1 })), p(undefined)];
    expect(stakeLocked(rows)).toBe(3n * MIN);
    expect(stakeLocked(rows, 89)).toBe(3n * MIN);
    expect(stakeLocked(rows, 90)).toBe(2n * MIN);
    expect(stakeLocked([])).toBe(0n);
  });
});

describe("contributions in their challenge window", () => {
  const rounds: RoundRow[] = [
    { round: 1, paid: 0n, fee: 0n, refunded: 0n, settledAt: 30, contributions: [{ who: BOB, reward: UNIT }] },
    { round: 0, paid: 0n, fee: 0n, refunded: 0n, settledAt: 20, contributions: [{ who: CHARLIE, reward: UNIT, challenged: 3n }] },
    // Settled but its contributions were not read: nothing to offer.
    { round: 2, paid: 0n, fee: 0n, refunded: 0n, settledAt: 40 },
  ];

  it("are those of rounds a transaction sent at the best block still lands in time for, oldest first", () => {
    // Round 0 closes at #36, round 1 at #46; a transaction sent at #35 lands at #36 at the earliest.
    expect(contributionsInWindow(rounds, 16, 35).map((c) => [c.round, c.who, c.closes])).toEqual([
      [0, CHARLIE, 36],
      [1, BOB, 46],
    ]);
    expect(contributionsInWindow(rounds, 16, 36).map((c) => c.round)).toEqual([1]);
    expect(contributionsInWindow(rounds, 16, 46)).toEqual([]);
    expect(contributionsInWindow(rounds, 0, 30)).toEqual([]);
    expect(contributionsInWindow(rounds, 16, undefined)).toEqual([]);
  });

  it("may be challenged unless already disputed or the challenger's own", () => {
    expect(canChallenge({ who: BOB, reward: UNIT }, ALICE)).toBe(true);
    expect(canChallenge({ who: BOB, reward: 0n }, ALICE)).toBe(true);
    expect(canChallenge({ who: BOB, reward: UNIT, challenged: 0n }, ALICE)).toBe(false);
    expect(canChallenge({ who: ALICE, reward: UNIT }, ALICE)).toBe(false);
  });
});

describe("loadJobs", () => {
  it("lists the newest jobs, however many older ones are still kept", async () => {
    // An attacker's 1,200 cheap jobs came first; the buyer's is job 1,200 (the one the fake knows as 4).
    const jobs = vi.fn(async (start: bigint, limit: number) => {
      const ids: [bigint, unknown][] = [];
      for (let id = start; id < 1201n && ids.length < limit; id++) ids.push([id, { type: "Open", value: undefined }]);
      return ids;
    });
    const { view } = fakeApi({});
    // Only the buyer's job has a record here; the others' do not matter.
    const job = vi.fn(async (id: bigint) => (id === 1200n ? view.Jobs.job(4n) : undefined));
    const api = {
      view: { Jobs: { jobs, job } },
      query: { Jobs: { NextJobId: { getValue: vi.fn(async () => 1201n) } } },
    } as unknown as GridApi;
    const rows = await loadJobs(api, "0xabc", 10);
    expect(jobs).toHaveBeenCalledWith(1191n, 10, { at: "0xabc" });
    expect(rows.map((r) => r.id)).toEqual([1200n]);
  });
});
