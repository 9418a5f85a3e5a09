// Plain job data for component tests (what the view functions would return).
import { OPEN_ADMISSION } from "../lib/admission";
import type { JobDetail, JobRow } from "../lib/jobs";
import type { JobLockRow } from "../lib/locks";
import type { CapabilitiesRow, ProviderRow } from "../lib/providers";
import { buildJobSpec, DEFAULT_FORM } from "../lib/spec";
import { UNIT } from "../lib/units";

export const ALICE = "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY";
export const BOB = "5FHneW46xGXgs5mUiveU4sbTyGBzmstUspZC92UhjJM694ty";
export const CHARLIE = "5FLSigC9HGRKVhB9FiEo4Y3koPsNmBmLJbpXg2mp1hXcS59Y";
export const HASH = `0x${"ab".repeat(32)}`;

export const SPEC = buildJobSpec(DEFAULT_FORM).spec!;
/** examples/llama-job.toml: the default job with a Llama-style transformer. */
export const TRANSFORMER_SPEC = buildJobSpec({ ...DEFAULT_FORM, model: "transformer" }).spec!;
/** examples/resnet-mnist-job.toml's model: the default job with a ResNet on MNIST. */
export const RESNET_SPEC = buildJobSpec({ ...DEFAULT_FORM, dataset: "mnist", model: "resnet" }).spec!;

/** The hardware the test providers declare. */
export const CAPABILITIES: CapabilitiesRow = {
  device: "Cpu",
  deviceName: "x86_64 2-core",
  deviceCount: 1,
  memoryMib: 24_576,
  tflopsMilli: 150,
  bandwidthMbps: 1_000,
  region: "local",
};

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
    cancelRequested: false,
    admission: OPEN_ADMISSION,
    ...patch,
  };
}

/** The lock a member of a job with the default spec holds for it (its `min_provider_stake`). */
export function memberLock(id: number, patch: Partial<JobLockRow> = {}): JobLockRow {
  return { job: BigInt(id), amount: SPEC.min_provider_stake, disputes: 0, ...patch };
}

/**
 * A completed job: Bob's lock lasts until block 90 (its rounds may still be challenged),
 * Charlie's has lapsed and was pruned.
 */
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
      { who: BOB, fromRound: 0, missedInRow: 0, roundsPaid: 5, earned: 75n * UNIT, lock: memberLock(3, { until: 90 }) },
      { who: CHARLIE, fromRound: 0, missedInRow: 0, roundsPaid: 5, earned: 75n * UNIT, lock: undefined },
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

/**
 * A running job whose members' locks as their provider records would hold them: Bob's is the
 * spec's minimum, Charlie's 1,000 GRID short and Alice has none (neither can happen on a chain
 * that keeps its invariants: the page must show it if it does).
 */
export function runningDetail(): JobDetail {
  const short = SPEC.min_provider_stake - 1_000n * UNIT;
  return {
    job: job(4, { status: "Running", participants: 3, roundsSettled: 1, paid: 30n * UNIT }),
    participants: [
      { who: BOB, fromRound: 0, missedInRow: 0, roundsPaid: 1, earned: 10n * UNIT, lock: memberLock(4) },
      { who: CHARLIE, fromRound: 0, missedInRow: 0, roundsPaid: 1, earned: 10n * UNIT, lock: memberLock(4, { amount: short }) },
      { who: ALICE, fromRound: 0, missedInRow: 0, roundsPaid: 1, earned: 10n * UNIT, lock: undefined },
    ],
    rounds: [{ round: 0, resultModelHash: HASH, members: 3, proofs: 3, paidParticipants: 3, paid: 30n * UNIT, fee: 0n, refunded: 0n, settledAt: 30 }],
  };
}

/** A provider as the view functions would return it (150 milli-TFLOP/s CPU, new: score 1). */
export function provider(who: string, patch: Partial<ProviderRow> = {}): ProviderRow {
  return {
    who,
    stake: 200n * UNIT,
    unbonding: [],
    capabilities: { ...CAPABILITIES },
    peerId: `0x0024${"cd".repeat(36)}`,
    multiaddrs: ["/ip4/127.0.0.1/tcp/40333"],
    endpoint: "http://127.0.0.1:8090",
    registeredAt: 7,
    activeJobs: 0,
    jobLocks: [],
    locked: 0n,
    health: { roundsDelivered: 0, roundsMissed: 0, challengesLost: 0, probesOk: 0, probesFailed: 0 },
    score: 1_000_000_000,
    ...patch,
  };
}

/**
 * A running job of Alice's (challenge window 16 blocks, `SPEC`'s) with the contributions the
 * page reads for its rounds: round 0 settled at 20 (window closed at 36), round 1 at 30 (closes
 * at 46; Bob's contribution already challenged, as #7), round 2 at 38 (closes at 54; Charlie's
 * a claim of another's update, Alice's own as a member of her job). At best block 40.
 */
export function challengeDetail(): JobDetail {
  const base = runningDetail();
  const round = (r: number, settledAt: number, contributions: NonNullable<JobDetail["rounds"][number]["contributions"]>) => ({
    round: r,
    resultModelHash: HASH,
    members: 3,
    proofs: 3,
    paidParticipants: 3,
    paid: 30n * UNIT,
    fee: 0n,
    refunded: 0n,
    settledAt,
    contributions,
  });
  return {
    ...base,
    job: job(5, { status: "Running", participants: 3, roundsSettled: 3, paid: 90n * UNIT }),
    rounds: [
      round(0, 20, [
        { who: BOB, reward: 10n * UNIT },
        { who: CHARLIE, reward: 10n * UNIT },
      ]),
      round(1, 30, [
        { who: BOB, reward: 10n * UNIT, challenged: 7n },
        { who: CHARLIE, reward: 10n * UNIT },
      ]),
      round(2, 38, [
        { who: ALICE, reward: 10n * UNIT },
        { who: BOB, reward: 10n * UNIT },
        { who: CHARLIE, reward: 0n },
      ]),
    ],
  };
}
