// Plain job data for component tests (what the view functions would return).
import type { JobDetail, JobRow } from "../lib/jobs";
import { buildJobSpec, DEFAULT_FORM } from "../lib/spec";
import { UNIT } from "../lib/units";

export const ALICE = "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY";
export const BOB = "5FHneW46xGXgs5mUiveU4sbTyGBzmstUspZC92UhjJM694ty";
export const CHARLIE = "5FLSigC9HGRKVhB9FiEo4Y3koPsNmBmLJbpXg2mp1hXcS59Y";
export const HASH = `0x${"ab".repeat(32)}`;

export const SPEC = buildJobSpec(DEFAULT_FORM).spec!;

export function job(id: number, patch: Partial<JobRow> = {}): JobRow {
  return {
    id: BigInt(id),
    buyer: ALICE,
    status: "Open",
    spec: SPEC,
    createdAt: 10,
    participants: 0,
    roundsSettled: 0,
    funded: 5n * 30_300_000_000_000n,
    paid: 0n,
    fees: 0n,
    refunded: 0n,
    held: 5n * 30_300_000_000_000n,
    clawedBack: 0n,
    ...patch,
  };
}

export function completedDetail(): JobDetail {
  return {
    job: job(3, {
      status: "Completed",
      finalModelHash: HASH,
      lastResult: HASH,
      participants: 2,
      roundsSettled: 5,
      paid: 150n * UNIT,
      fees: 3n * UNIT / 2n,
      held: 0n,
    }),
    participants: [
      { who: BOB, fromRound: 0, missedInRow: 0, roundsPaid: 5, earned: 75n * UNIT },
      { who: CHARLIE, fromRound: 0, missedInRow: 0, roundsPaid: 5, earned: 75n * UNIT },
    ],
    rounds: [0, 1, 2, 3, 4].map((round) => ({
      round,
      resultModelHash: HASH,
      members: 2,
      proofs: 2,
      paidParticipants: 2,
      paid: 30n * UNIT,
      fee: 3n * UNIT / 10n,
      refunded: 0n,
      settledAt: 20 + 8 * round,
    })),
  };
}
