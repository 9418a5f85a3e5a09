import { describe, expect, it } from "vitest";
import { parseRoute } from "../hooks/useHashRoute";
import { ALICE, BOB, CHARLIE, job, provider } from "../test/fixtures";
import {
  earnings,
  foldProviderEvent,
  formatMemory,
  formatScore,
  formatTflops,
  providerJobsOf,
  providerRowOf,
  providerStatus,
  sortProviders,
  unbondingTotal,
  uptime,
  validateStakeAmount,
  withdrawable,
} from "./providers";
import { formatDispatchError } from "./tx";
import { UNIT } from "./units";

const enc = (s: string) => Uint8Array.from(Buffer.from(s));

describe("provider rows", () => {
  it("decode the view function's record", () => {
    const row = providerRowOf(BOB, {
      provider: {
        stake: 200n * UNIT,
        unbonding: [{ amount: UNIT, unlock_at: 50 }],
        capabilities: {
          device: { type: "Cuda", value: undefined },
          device_name: enc("NVIDIA H100"),
          device_count: 8,
          memory_mib: 81_920,
          tflops_milli: 7_912_000,
          bandwidth_mbps: 10_000,
          region: enc("eu-west"),
        },
        peer_id: "0x00",
        multiaddrs: [enc("/ip4/1.2.3.4/tcp/30333")],
        endpoint: enc("https://p.example/health"),
        registered_at: 3,
        jobs: [
          { job: 7n, amount: 100n * UNIT, state: { type: "Member", value: undefined }, disputes: 0 },
          { job: 5n, amount: 50n * UNIT, state: { type: "Until", value: 90 }, disputes: 1 },
        ],
      },
      health: { rounds_delivered: 4, rounds_missed: 1, challenges_lost: 0, probes_ok: 9, probes_failed: 1, last_probe: { at: 40, ok: true, latency_ms: 12 } },
      locked: 150n * UNIT,
      score: 750_000_000,
    } as never);
    expect(row).toMatchObject({
      who: BOB,
      unbonding: [{ amount: UNIT, unlockAt: 50 }],
      capabilities: { device: "Cuda", deviceName: "NVIDIA H100", deviceCount: 8, region: "eu-west" },
      multiaddrs: ["/ip4/1.2.3.4/tcp/30333"],
      endpoint: "https://p.example/health",
      health: { roundsDelivered: 4, lastProbe: { at: 40, ok: true, latencyMs: 12 } },
      score: 750_000_000,
    });
  });

  it("derive the jobs it is in and its job locks from the record's locks", () => {
    const view = (jobs: unknown[], locked: bigint) =>
      ({
        provider: {
          stake: 300n * UNIT,
          unbonding: [],
          capabilities: {
            device: { type: "Cpu", value: undefined },
            device_name: enc("cpu"),
            device_count: 1,
            memory_mib: 1024,
            tflops_milli: 150,
            bandwidth_mbps: 100,
            region: enc(""),
          },
          peer_id: "0x00",
          multiaddrs: [],
          endpoint: enc("http://x"),
          registered_at: 3,
          jobs,
        },
        health: { rounds_delivered: 0, rounds_missed: 0, challenges_lost: 0, probes_ok: 0, probes_failed: 0 },
        locked,
        score: 1_000_000_000,
      }) as never;
    const row = providerRowOf(
      BOB,
      view(
        [
          { job: 7n, amount: 100n * UNIT, state: { type: "Member", value: undefined }, disputes: 0 },
          { job: 5n, amount: 50n * UNIT, state: { type: "Until", value: 90 }, disputes: 1 },
        ],
        150n * UNIT,
      ),
    );
    expect(row.activeJobs).toBe(1);
    expect(row.jobLocks).toEqual([
      { job: 7n, amount: 100n * UNIT, disputes: 0 },
      { job: 5n, amount: 50n * UNIT, until: 90, disputes: 1 },
    ]);
    expect(row.jobLocks[0]).not.toHaveProperty("until");
    expect(row.locked).toBe(150n * UNIT);
    expect(providerStatus(row)).toBe("In job");

    // Only a lock it left: not in a job, but its stake stays locked until the block.
    const left = providerRowOf(BOB, view([{ job: 5n, amount: 50n * UNIT, state: { type: "Until", value: 90 }, disputes: 0 }], 50n * UNIT));
    expect(left).toMatchObject({ activeJobs: 0, jobLocks: [{ job: 5n, until: 90 }], locked: 50n * UNIT });
    expect(providerStatus(left)).toBe("Idle");
    expect(providerRowOf(BOB, view([], 0n))).toMatchObject({ activeJobs: 0, jobLocks: [], locked: 0n });
  });

  it("sum unbonding and what is withdrawable at a block", () => {
    const p = provider(BOB, { unbonding: [{ amount: 2n, unlockAt: 10 }, { amount: 3n, unlockAt: 20 }] });
    expect(unbondingTotal(p)).toBe(5n);
    expect(withdrawable(p, 9)).toBe(0n);
    expect(withdrawable(p, 10)).toBe(2n);
    expect(withdrawable(p, 25)).toBe(5n);
  });

  it("format throughput, score and memory", () => {
    expect(formatTflops(150)).toBe("0.15 TFLOP/s");
    expect(formatTflops(7_912_000)).toBe("7912 TFLOP/s");
    expect(formatScore(1_000_000_000)).toBe("1.000");
    expect(formatScore(333_333_333)).toBe("0.333");
    expect(formatMemory(24_576)).toBe("24 GiB");
    expect(formatMemory(512)).toBe("512 MiB");
    expect(uptime(provider(BOB).health)).toBeUndefined();
    expect(uptime({ ...provider(BOB).health, probesOk: 3, probesFailed: 1 })).toBe(0.75);
  });

  it("sort by stake (default), throughput or score, largest first", () => {
    const rows = [
      provider(ALICE, { stake: 100n * UNIT, score: 900 }),
      provider(BOB, { stake: 300n * UNIT, score: 100 }),
      provider(CHARLIE, { stake: 200n * UNIT, score: 500, capabilities: { ...provider(CHARLIE).capabilities, tflopsMilli: 9_000 } }),
    ];
    expect(sortProviders(rows).map((p) => p.who)).toEqual([BOB, CHARLIE, ALICE]);
    expect(sortProviders(rows, "score").map((p) => p.who)).toEqual([ALICE, CHARLIE, BOB]);
    expect(sortProviders(rows, "tflops")[0]!.who).toBe(CHARLIE);
    expect(sortProviders(rows, "stake", false).map((p) => p.who)).toEqual([ALICE, CHARLIE, BOB]);
  });
});

describe("a provider's jobs and events", () => {
  it("pick the jobs listing the provider, newest first, and total the earnings", () => {
    const jobs = [job(1, { status: "Completed", roundsSettled: 5 }), job(2, { status: "Running" }), job(3)];
    const participants = new Map([
      [1n, [{ who: BOB, fromRound: 0, missedInRow: 0, roundsPaid: 5, earned: 75n * UNIT }]],
      [2n, [{ who: CHARLIE, fromRound: 0, missedInRow: 0, roundsPaid: 1, earned: UNIT }, { who: BOB, fromRound: 1, missedInRow: 1, roundsPaid: 2, earned: 20n * UNIT }]],
      [3n, [{ who: CHARLIE, fromRound: 0, missedInRow: 0, roundsPaid: 0, earned: 0n }]],
    ]);
    const rows = providerJobsOf(jobs, participants, BOB);
    expect(rows.map((r) => r.id)).toEqual([2n, 1n]);
    expect(rows[0]).toMatchObject({ status: "Running", fromRound: 1, missedInRow: 1, roundsPaid: 2, earned: 20n * UNIT, rounds: 5 });
    expect(earnings(rows)).toEqual({ earned: 95n * UNIT, roundsPaid: 7 });
    expect(earnings([])).toEqual({ earned: 0n, roundsPaid: 0 });
  });

  it("keep live events newest first, bounded", () => {
    let rows = foldProviderEvent([], { kind: "RewardPaid", block: 5, job: 1n, round: 0, amount: 2n });
    rows = foldProviderEvent(rows, { kind: "Slashed", block: 6, reason: "Liveness", amount: 3n, toRecipients: 1n });
    expect(rows.map((r) => r.block)).toEqual([6, 5]);
    expect(foldProviderEvent(rows, { kind: "RewardPaid", block: 7, job: 1n, round: 1, amount: 2n }, 2).map((r) => r.block)).toEqual([7, 6]);
  });
});

describe("stake amounts", () => {
  const ctx = { stake: 200n * UNIT, minStake: 100n * UNIT, free: 50n * UNIT, activeJobs: 0 };
  it("accept what the pallet accepts", () => {
    expect(validateStakeAmount("10.5", "bond", ctx)).toBe(10n * UNIT + UNIT / 2n);
    expect(validateStakeAmount("100", "unbond", ctx)).toBe(100n * UNIT);
    expect(validateStakeAmount("200", "unbond", ctx)).toBe(200n * UNIT);
  });
  it("refuse the rest with a reason", () => {
    expect(validateStakeAmount("", "bond", ctx)).toBe("must be a non-negative number of GRID");
    expect(validateStakeAmount("-1", "bond", ctx)).toBe("must be a non-negative number of GRID");
    expect(validateStakeAmount("0", "unbond", ctx)).toBe("must be more than zero");
    expect(validateStakeAmount("0.0000000000001", "bond", ctx)).toBe("at most 12 decimals");
    expect(validateStakeAmount("51", "bond", ctx)).toBe("more than the account's free balance");
    expect(validateStakeAmount("10", "bond", { ...ctx, stake: 0n })).toBe("the stake after bonding must be at least the minimum stake");
    expect(validateStakeAmount("201", "unbond", ctx)).toBe("more than the active stake");
    expect(validateStakeAmount("150", "unbond", ctx)).toBe("what stays bonded must be zero or at least the minimum stake");
    expect(validateStakeAmount("200", "unbond", { ...ctx, activeJobs: 1 })).toBe("a provider in a job must keep the minimum stake");
  });
  it("refuse unbonding below the stake locked for jobs, in the pallet's order", () => {
    const locked = "that much stake is locked for jobs: at least 150 GRID must stay bonded";
    // Left a job (no Member lock) whose lock still binds: above the minimum, below what is locked.
    expect(validateStakeAmount("60", "unbond", { ...ctx, locked: 150n * UNIT })).toBe(locked);
    expect(validateStakeAmount("50", "unbond", { ...ctx, locked: 150n * UNIT })).toBe(50n * UNIT);
    // Everything, with a lock left: StakeLocked (not "zero or at least the minimum", which would allow it).
    expect(validateStakeAmount("200", "unbond", { ...ctx, locked: 150n * UNIT })).toBe(locked);
    // In a job and below the minimum: InJob first.
    expect(validateStakeAmount("150", "unbond", { ...ctx, activeJobs: 1, locked: 150n * UNIT })).toBe(
      "a provider in a job must keep the minimum stake",
    );
    // Below the minimum but not below what is locked: then the zero-or-minimum rule.
    expect(validateStakeAmount("150", "unbond", { ...ctx, locked: 20n * UNIT })).toBe(
      "what stays bonded must be zero or at least the minimum stake",
    );
    // Known even without the minimum; bonding is not limited by it.
    expect(validateStakeAmount("60", "unbond", { stake: 200n * UNIT, activeJobs: 0, locked: 150n * UNIT })).toBe(locked);
    expect(validateStakeAmount("10", "bond", { ...ctx, locked: 150n * UNIT })).toBe(10n * UNIT);
  });
  it("decode the pallet's errors", () => {
    expect(formatDispatchError({ type: "Module", value: { type: "Providers", value: { type: "InsufficientBond" } } })).toBe(
      "Providers.InsufficientBond: unbonding more than the active stake",
    );
    expect(formatDispatchError({ type: "Module", value: { type: "Providers", value: { type: "StakeLocked" } } })).toBe(
      "Providers.StakeLocked: that much active stake is locked for jobs (taken part in, or left less than a challenge window and voting period ago)",
    );
    expect(formatDispatchError({ type: "Module", value: { type: "Providers", value: { type: "InJob" } } })).toBe(
      "Providers.InJob: the provider is in a job: leave it first (it must keep the minimum stake, and its capabilities are frozen)",
    );
    expect(formatDispatchError({ type: "Module", value: { type: "Jobs", value: { type: "TooManyJobs" } } })).toBe(
      "Jobs.TooManyJobs: the provider takes part in (or recently left) as many jobs as it may",
    );
    expect(formatDispatchError({ type: "Module", value: { type: "Providers", value: { type: "EndpointNotPublic" } } })).toBe(
      "Providers.EndpointNotPublic: the endpoint's host is not a public IP address (loopback only on development chains; no DNS names)",
    );
    expect(formatDispatchError({ type: "Module", value: { type: "Jobs", value: { type: "CancelPending" } } })).toBe(
      "Jobs.CancelPending: the buyer cancelled the job: it ends when its open round settles",
    );
  });
});

describe("provider routes", () => {
  it("route #/providers and #/providers/<address>", () => {
    expect(parseRoute("#/providers")).toEqual({ page: "providers" });
    expect(parseRoute(`#/providers/${BOB}`)).toEqual({ page: "provider", who: BOB });
    expect(parseRoute("#/providers/0OIl")).toEqual({ page: "missing", path: "/providers/0OIl" });
  });
});

describe("provider status", () => {
  it("is in a job, idle, or leaving", () => {
    expect(providerStatus(provider(BOB, { activeJobs: 2 }))).toBe("In job");
    expect(providerStatus(provider(BOB))).toBe("Idle");
    expect(providerStatus(provider(BOB, { stake: 0n, unbonding: [{ amount: 200n * UNIT, unlockAt: 99 }] }))).toBe("Leaving");
  });
});
