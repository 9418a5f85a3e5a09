// Reading a job's detail from mocked view functions (no node), and judging its members' locks.
import { describe, expect, it, vi } from "vitest";
import { ALICE, BOB, CHARLIE, job, memberLock, SPEC } from "../test/fixtures";
import { OPEN_ADMISSION } from "./admission";
import type { GridApi } from "./chain";
import { loadJobDetail, lockProblem, stakeLocked, type JobParticipantRow } from "./jobs";
import { UNIT } from "./units";

const MIN = SPEC.min_provider_stake;
const member = { type: "Member", value: undefined };

/** A provider record as `Providers.provider` returns it; only its locks matter here. */
const providerView = (jobs: unknown[]) => ({ provider: { jobs }, health: {}, locked: 0n, score: 0 });

/** An api whose job, participants, round and provider views answer from plain data. */
function fakeApi(providers: Record<string, unknown>) {
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
                rounds_settled: 1,
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
  return { api: { view } as unknown as GridApi, view };
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
