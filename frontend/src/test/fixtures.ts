// Plain job data for component tests (what the view functions would return).
import { OPEN_ADMISSION } from "../lib/admission";
import type { JobDetail, JobRow } from "../lib/jobs";
import type { CapabilitiesRow, ProviderRow } from "../lib/providers";
import { buildJobSpec, DEFAULT_FORM } from "../lib/spec";
import { UNIT } from "../lib/units";

export const ALICE = "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY";
export const BOB = "5FHneW46xGXgs5mUiveU4sbTyGBzmstUspZC92UhjJM694ty";
export const CHARLIE = "5FLSigC9HGRKVhB9FiEo4Y3koPsNmBmLJbpXg2mp1hXcS59Y";
export const HASH = `0x${"ab".repeat(32)}`;

export const SPEC = buildJobSpec(DEFAULT_FORM).spec!;

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
