// Plain provider data the provider components render, and how it is read from the chain
// (pallet-providers and pallet-jobs view functions). Components take these types, so tests can
// render them without a node.
import type { GridApi } from "./chain";
import { loadJobs, participantRowOf, type At, type JobRow, type JobStatusName, type ParticipantRow } from "./jobs";
import { jobLockRowOf, type JobLockRow } from "./locks";
import { formatGrid, NANOS_ONE, parseGrid } from "./units";

export type { JobLockRow };

export type DeviceKindName = "Cpu" | "Cuda" | "Rocm" | "Metal";

/** Declared hardware (`grid_primitives::provider::Capabilities`), decoded. */
export interface CapabilitiesRow {
  device: DeviceKindName;
  deviceName: string;
  deviceCount: number;
  memoryMib: number;
  /** Dense throughput of all devices, thousandths of a TFLOP/s. */
  tflopsMilli: number;
  bandwidthMbps: number;
  region: string;
}

export interface UnbondingRow {
  amount: bigint;
  unlockAt: number;
}

export interface ProbeRow {
  at: number;
  ok: boolean;
  latencyMs: number;
}

export interface HealthRow {
  roundsDelivered: number;
  roundsMissed: number;
  challengesLost: number;
  probesOk: number;
  probesFailed: number;
  lastProbe?: ProbeRow;
}

/** One provider, as the list and its page show it. */
export interface ProviderRow {
  who: string;
  stake: bigint;
  unbonding: UnbondingRow[];
  capabilities: CapabilitiesRow;
  peerId: string;
  multiaddrs: string[];
  endpoint: string;
  registeredAt: number;
  /** Jobs it takes part in now (its `Member` locks). */
  activeJobs: number;
  /** Its job locks, members' and recently left jobs' alike, as the record keeps them. */
  jobLocks: JobLockRow[];
  /** Active stake locked for jobs at the block read (the view's `locked`). */
  locked: bigint;
  health: HealthRow;
  /** `health.score()` in Perbill parts (1e9 = 1). */
  score: number;
}

type ProviderView = NonNullable<Awaited<ReturnType<GridApi["view"]["Providers"]["provider"]>>>;

const utf8 = new TextDecoder();
/** Bytes the chain keeps as text (device name, addresses); lossy for invalid UTF-8. */
export function text(bytes: Uint8Array | string): string {
  return typeof bytes === "string" ? bytes : utf8.decode(bytes);
}

/** A view function's provider record as a row. */
export function providerRowOf(who: string, view: ProviderView): ProviderRow {
  const { provider: p, health: h, score, locked } = view;
  const c = p.capabilities;
  const jobLocks = p.jobs.map(jobLockRowOf);
  return {
    who,
    stake: p.stake,
    unbonding: p.unbonding.map((u) => ({ amount: u.amount, unlockAt: u.unlock_at })),
    capabilities: {
      device: c.device.type,
      deviceName: text(c.device_name),
      deviceCount: c.device_count,
      memoryMib: c.memory_mib,
      tflopsMilli: c.tflops_milli,
      bandwidthMbps: c.bandwidth_mbps,
      region: text(c.region),
    },
    peerId: p.peer_id,
    multiaddrs: p.multiaddrs.map(text),
    endpoint: text(p.endpoint),
    registeredAt: p.registered_at,
    activeJobs: jobLocks.filter((l) => l.until === undefined).length,
    jobLocks,
    locked,
    health: {
      roundsDelivered: h.rounds_delivered,
      roundsMissed: h.rounds_missed,
      challengesLost: h.challenges_lost,
      probesOk: h.probes_ok,
      probesFailed: h.probes_failed,
      lastProbe: h.last_probe && { at: h.last_probe.at, ok: h.last_probe.ok, latencyMs: h.last_probe.latency_ms },
    },
    score,
  };
}

/** Stake waiting out the unbonding period (all chunks). */
export function unbondingTotal(p: Pick<ProviderRow, "unbonding">): bigint {
  return p.unbonding.reduce((sum, u) => sum + u.amount, 0n);
}

/** What `withdraw_unbonded` would release at block `now`: chunks with `unlock_at <= now`. */
export function withdrawable(p: Pick<ProviderRow, "unbonding">, now: number): bigint {
  return p.unbonding.filter((u) => u.unlockAt <= now).reduce((sum, u) => sum + u.amount, 0n);
}

/** 150 → "0.15 TFLOP/s". */
export function formatTflops(milli: number): string {
  return `${Number((milli / 1000).toPrecision(6))} TFLOP/s`;
}

/** A score in Perbill parts as a number in [0, 1] with three decimals: 500_000_000 → "0.500". */
export function formatScore(parts: number): string {
  return (parts / NANOS_ONE).toFixed(3);
}

/** 24_576 → "24 GiB"; below a GiB in MiB. */
export function formatMemory(mib: number): string {
  return mib >= 1024 ? `${Number((mib / 1024).toPrecision(4))} GiB` : `${mib} MiB`;
}

/** Uptime as probes ok / all probes, or undefined before the first probe. */
export function uptime(h: HealthRow): number | undefined {
  const all = h.probesOk + h.probesFailed;
  return all === 0 ? undefined : h.probesOk / all;
}

export type ProviderStatusName = "In job" | "Idle" | "Leaving";

/** In a job, idle, or leaving (nothing bonded any more, stake unbonding). */
export function providerStatus(p: Pick<ProviderRow, "stake" | "activeJobs">): ProviderStatusName {
  if (p.activeJobs > 0) return "In job";
  return p.stake === 0n ? "Leaving" : "Idle";
}

export type ProviderSortKey = "stake" | "tflops" | "score" | "registered";
export const PROVIDER_SORT_KEYS: { key: ProviderSortKey; label: string }[] = [
  { key: "stake", label: "Stake" },
  { key: "tflops", label: "TFLOP/s" },
  { key: "score", label: "Health score" },
  { key: "registered", label: "Registered" },
];

const sortValue = (p: ProviderRow, key: ProviderSortKey): bigint | number =>
  key === "stake" ? p.stake : key === "tflops" ? p.capabilities.tflopsMilli : key === "score" ? p.score : p.registeredAt;

/** Providers ordered by `key`, largest first (ties by account, so the order is stable). */
export function sortProviders(rows: ProviderRow[], key: ProviderSortKey = "stake", descending = true): ProviderRow[] {
  return [...rows].sort((a, b) => {
    const x = sortValue(a, key);
    const y = sortValue(b, key);
    const c = x < y ? -1 : x > y ? 1 : a.who < b.who ? -1 : a.who > b.who ? 1 : 0;
    return descending ? -c : c;
  });
}

/** Every registered provider, largest stake first. */
export async function loadProviders(api: GridApi, at: At = "best"): Promise<ProviderRow[]> {
  const all = await api.view.Providers.providers({ at });
  return sortProviders(all.map(([who, view]) => providerRowOf(who, view)));
}

/** One provider, or undefined when the account is not registered. */
export async function loadProvider(api: GridApi, who: string, at: At = "best"): Promise<ProviderRow | undefined> {
  const view = await api.view.Providers.provider(who, { at });
  return view && providerRowOf(who, view);
}

/** A job the provider takes (or took) part in, with what it earned there. */
export interface ProviderJobRow {
  id: bigint;
  status: JobStatusName;
  roundsSettled: number;
  rounds: number;
  fromRound: number;
  missedInRow: number;
  roundsPaid: number;
  earned: bigint;
}

/** The jobs listing `who` among their participants, newest first. */
export function providerJobsOf(jobs: JobRow[], participants: Map<bigint, ParticipantRow[]>, who: string): ProviderJobRow[] {
  const rows: ProviderJobRow[] = [];
  for (const j of jobs) {
    const p = participants.get(j.id)?.find((x) => x.who === who);
    if (!p) continue;
    rows.push({
      id: j.id,
      status: j.status,
      roundsSettled: j.roundsSettled,
      rounds: j.spec.rounds,
      fromRound: p.fromRound,
      missedInRow: p.missedInRow,
      roundsPaid: p.roundsPaid,
      earned: p.earned,
    });
  }
  return rows.sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
}

/** Total earned and rounds paid over the provider's jobs. */
export function earnings(rows: ProviderJobRow[]): { earned: bigint; roundsPaid: number } {
  return rows.reduce((t, r) => ({ earned: t.earned + r.earned, roundsPaid: t.roundsPaid + r.roundsPaid }), {
    earned: 0n,
    roundsPaid: 0,
  });
}

/**
 * The jobs `who` participates in, from the `jobs` and `participants` views (one participants
 * call per job: fine for a dev network, to be indexed for a large one).
 */
export async function loadProviderJobs(api: GridApi, who: string, at: At = "best"): Promise<ProviderJobRow[]> {
  const jobs = await loadJobs(api, at);
  const lists = await Promise.all(jobs.map((j) => api.view.Jobs.participants(j.id, { at })));
  const participants = new Map<bigint, ParticipantRow[]>();
  jobs.forEach((j, i) => participants.set(j.id, lists[i]!.map(([w, p]) => participantRowOf(w, p))));
  return providerJobsOf(jobs, participants, who);
}

/** The registry's constants. */
export interface ProviderConstants {
  minStake: bigint;
  unbondingPeriod: number;
  maxUnbondingChunks: number;
}

export async function providerConstants(api: GridApi): Promise<ProviderConstants> {
  const c = api.constants.Providers;
  const [minStake, unbondingPeriod, maxUnbondingChunks] = await Promise.all([
    c.MinStake(),
    c.UnbondingPeriod(),
    c.MaxUnbondingChunks(),
  ]);
  return { minStake, unbondingPeriod, maxUnbondingChunks };
}

/** pallet-providers `SlashReason`; `Outvoted`: a committee member that revealed the verdict its
 * committee's majority decided against. */
export type SlashReasonName = "Equivocation" | "Fraud" | "Liveness" | "CommitteeAbsence" | "Outvoted";

/** A reward or a slash of one provider, seen in a finalized block. */
export type ProviderEvent =
  | { kind: "RewardPaid"; block: number; job: bigint; round: number; amount: bigint }
  | { kind: "Slashed"; block: number; reason: SlashReasonName; amount: bigint; toRecipients: bigint };

/** Appends a live event, newest first, at most `max` kept. */
export function foldProviderEvent(rows: ProviderEvent[], e: ProviderEvent, max = 200): ProviderEvent[] {
  return [e, ...rows].slice(0, max);
}

export type StakeAction = "bond" | "unbond";

export interface StakeContext {
  /** Active stake now. */
  stake: bigint;
  minStake?: bigint;
  /** Free balance of the account, when known (for bonding). */
  free?: bigint;
  /** Jobs it is in: then it must keep the minimum. */
  activeJobs: number;
  /** Active stake locked for jobs (the view's `locked`): unbonding must leave at least this. */
  locked?: bigint;
}

/**
 * Checks a GRID amount typed for `bond_more` / `unbond` against what the pallet accepts
 * (`ZeroAmount`, `InsufficientBalance`, `InsufficientBond`, `InJob`, `StakeLocked`,
 * `StakeTooLow`, in the pallet's order): the amount in units, or why not.
 */
export function validateStakeAmount(textAmount: string, action: StakeAction, ctx: StakeContext): bigint | string {
  const amount = parseGrid(textAmount);
  if (typeof amount === "string") return amount;
  if (amount === 0n) return "must be more than zero";
  if (action === "bond") {
    if (ctx.free !== undefined && amount > ctx.free) return "more than the account's free balance";
    if (ctx.minStake !== undefined && ctx.stake + amount < ctx.minStake)
      return "the stake after bonding must be at least the minimum stake";
    return amount;
  }
  if (amount > ctx.stake) return "more than the active stake";
  const left = ctx.stake - amount;
  if (ctx.minStake !== undefined && ctx.activeJobs > 0 && left < ctx.minStake)
    return "a provider in a job must keep the minimum stake";
  if (ctx.locked !== undefined && left < ctx.locked)
    return `that much stake is locked for jobs: at least ${formatGrid(ctx.locked)} must stay bonded`;
  if (ctx.minStake !== undefined && left !== 0n && left < ctx.minStake)
    return "what stays bonded must be zero or at least the minimum stake";
  return amount;
}
