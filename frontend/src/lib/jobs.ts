// Plain data the job components render, and how it is read from the chain (pallet-jobs view
// functions). Components take these types, so tests can render them without a node.
import type { Admission } from "./admission";
import type { GridApi } from "./chain";
import { jobLockIn, lockBinds, type JobLockRow } from "./locks";
import type { JobEvent } from "./source";
import type { JobSpec } from "./spec";

export type JobStatusName = "Open" | "Running" | "Completed" | "Cancelled";
export const JOB_STATUSES: JobStatusName[] = ["Open", "Running", "Completed", "Cancelled"];

/** The open round of a running job. */
export interface OpenRound {
  index: number;
  openedAt: number;
  deadline: number;
  members: string[];
  /** Attestations so far (all result hashes together). */
  attested: number;
  /** Members admitted from this round: they count towards its quorum once they deliver. */
  joiners: number;
  quorum?: string;
}

/** One job, as the list and the detail page show it. */
export interface JobRow {
  id: bigint;
  buyer: string;
  status: JobStatusName;
  /** Completed jobs: the last result a quorum attested. */
  finalModelHash?: string;
  spec: JobSpec;
  createdAt: number;
  participants: number;
  roundsSettled: number;
  lastResult?: string;
  funded: bigint;
  paid: bigint;
  fees: bigint;
  refunded: bigint;
  held: bigint;
  clawedBack: bigint;
  /** The buyer cancelled while a round was open: the job ends when that round settles. */
  cancelRequested: boolean;
  round?: OpenRound;
  /** Who may join besides holding the stake (the default admits anyone with it). */
  admission: Admission;
}

export interface ParticipantRow {
  who: string;
  fromRound: number;
  missedInRow: number;
  roundsPaid: number;
  earned: bigint;
}

/** A participant on the job page, with the stake the chain really holds for the job. */
export interface JobParticipantRow extends ParticipantRow {
  /**
   * Its provider record's lock for this job: a member's while the job is live, one lasting
   * until a block after it ended (or nothing once that lapsed and was pruned). Read from the
   * registry rather than assumed from the spec, so that a missing lock would show.
   */
  lock: JobLockRow | undefined;
}

/**
 * A provider's contribution to a settled round (`Jobs.Contributions`), the evidence a challenge
 * disputes, with the challenge or audit already disputing it (`Jobs.Challenged`), if any.
 */
export interface ContributionRow {
  who: string;
  /** Zero: a claim of another member's update (a copy), kept to be disputed but not paid. */
  reward: bigint;
  /** The id of the challenge or audit of it: a contribution is disputed once at most. */
  challenged?: bigint;
}

/** A settled round (`RoundSummary`), or one seen settling in an event. */
export interface RoundRow {
  round: number;
  resultModelHash?: string;
  members?: number;
  proofs?: number;
  paidParticipants?: number;
  paid: bigint;
  fee: bigint;
  refunded: bigint;
  settledAt?: number;
  /** Rewards seen in `RewardPaid` events while the page was open. */
  rewards?: { who: string; amount: bigint }[];
  /**
   * The round's contributions, read from state only for rounds whose challenge window was
   * still open at the block read (undefined for the others).
   */
  contributions?: ContributionRow[];
}

export interface JobDetail {
  job: JobRow;
  participants: JobParticipantRow[];
  rounds: RoundRow[];
}

type JobView = NonNullable<Awaited<ReturnType<GridApi["view"]["Jobs"]["job"]>>>;
type RoundSummary = NonNullable<Awaited<ReturnType<GridApi["view"]["Jobs"]["round_result"]>>>;
type ParticipantView = Awaited<ReturnType<GridApi["view"]["Jobs"]["participants"]>>[number][1];

/** A view function's job record as a row. */
export function jobRowOf(id: bigint, view: JobView): JobRow {
  const { job, held, round, admission } = view;
  return {
    id,
    buyer: job.buyer,
    status: job.status.type,
    finalModelHash: job.status.type === "Completed" ? job.status.value.final_model_hash : undefined,
    spec: job.spec,
    createdAt: job.created_at,
    participants: job.participants,
    roundsSettled: job.rounds_settled,
    lastResult: job.last_result,
    funded: job.funded,
    paid: job.paid,
    fees: job.fees,
    refunded: job.refunded,
    held,
    clawedBack: job.clawed_back,
    cancelRequested: job.cancel_requested,
    round: round && {
      index: round.index,
      openedAt: round.opened_at,
      deadline: round.deadline,
      members: round.members,
      attested: round.tally.reduce((n, [, count]) => n + count, 0),
      joiners: round.members.length - round.established,
      quorum: round.quorum,
    },
    admission,
  };
}

/** A view function's participant record as a row. */
export function participantRowOf(who: string, p: ParticipantView): ParticipantRow {
  return {
    who,
    fromRound: p.from_round,
    missedInRow: p.missed_in_row,
    roundsPaid: p.rounds_paid,
    earned: p.earned,
  };
}

export function roundRowOf(round: number, s: RoundSummary): RoundRow {
  return {
    round,
    resultModelHash: s.result_model_hash,
    members: s.members,
    proofs: s.proofs,
    paidParticipants: s.paid_participants,
    paid: s.paid,
    fee: s.fee,
    refunded: s.refunded,
    settledAt: s.settled_at,
  };
}

/** Where to read from: a block hash, or the best / finalized block. */
export type At = string | "best" | "finalized";

/**
 * The newest jobs (those of the last `limit` ids, pruned ones left out), newest first. The
 * listing starts `limit` ids before the next id: from id 0, the oldest jobs still kept filled
 * the list and a buyer's new job was not on it.
 */
export async function loadJobs(api: GridApi, at: At = "best", limit = 500): Promise<JobRow[]> {
  const next = await api.query.Jobs.NextJobId.getValue({ at });
  const span = BigInt(limit);
  const ids = await api.view.Jobs.jobs(next > span ? next - span : 0n, limit, { at });
  const views = await Promise.all(ids.map(([id]) => api.view.Jobs.job(id, { at })));
  const rows: JobRow[] = [];
  views.forEach((view, i) => {
    if (view) rows.push(jobRowOf(ids[i]![0], view));
  });
  return rows.reverse();
}

/** Most past rounds read per job page (the newest ones). */
export const MAX_ROUNDS_SHOWN = 100;

/**
 * The job's participants, each with its provider record's lock for the job (one provider view
 * per participant, read in parallel once the participants are known).
 */
async function loadParticipants(api: GridApi, id: bigint, at: At): Promise<JobParticipantRow[]> {
  const list = await api.view.Jobs.participants(id, { at });
  const providers = await Promise.all(list.map(([who]) => api.view.Providers.provider(who, { at })));
  return list.map(([who, p], i) => ({ ...participantRowOf(who, p), lock: jobLockIn(providers[i], id) }));
}

/** A job with its participants and settled rounds, or undefined when it does not exist. */
export async function loadJobDetail(api: GridApi, id: bigint, at: At = "best"): Promise<JobDetail | undefined> {
  const view = await api.view.Jobs.job(id, { at });
  if (!view) return undefined;
  const job = jobRowOf(id, view);
  const first = Math.max(0, job.roundsSettled - MAX_ROUNDS_SHOWN);
  const indices = Array.from({ length: job.roundsSettled - first }, (_, i) => first + i);
  const window = job.spec.challenge_window;
  const [participants, summaries, number] = await Promise.all([
    loadParticipants(api, id, at),
    Promise.all(indices.map((r) => api.view.Jobs.round_result(id, r, { at }))),
    window > 0 && indices.length > 0 ? api.query.System.Number.getValue({ at }) : undefined,
  ]);
  const rounds: RoundRow[] = [];
  summaries.forEach((s, i) => {
    if (s) rounds.push(roundRowOf(indices[i]!, s));
  });
  if (number !== undefined) {
    const open = rounds.filter((r) => r.settledAt !== undefined && number <= challengeWindowCloses(r.settledAt, window));
    await Promise.all(open.map(async (r) => (r.contributions = await loadContributions(api, id, r.round, at))));
  }
  return { job, participants, rounds };
}

/** A settled round's contributions (`Contributions`), each with its challenge (`Challenged`), by address. */
async function loadContributions(api: GridApi, id: bigint, round: number, at: At): Promise<ContributionRow[]> {
  const [paid, challenged] = await Promise.all([
    api.query.Jobs.Contributions.getEntries([id, round], { at }),
    api.query.Jobs.Challenged.getEntries([id, round], { at }),
  ]);
  const ids = new Map(challenged.map(({ keyArgs: [, who], value }) => [who, value]));
  return paid
    .map(({ keyArgs: [, who], value }): ContributionRow => {
      const challenge = ids.get(who);
      return challenge === undefined ? { who, reward: value.reward } : { who, reward: value.reward, challenged: challenge };
    })
    .sort((a, b) => (a.who < b.who ? -1 : a.who > b.who ? 1 : 0));
}

/** The last block a challenge of a round settled at `settledAt` is taken in (`settled_at + challenge_window`). */
export function challengeWindowCloses(settledAt: number, window: number): number {
  return settledAt + window;
}

/** A contribution of a round whose challenge window is still open, with the block it closes at. */
export interface OpenContributionRow extends ContributionRow {
  round: number;
  closes: number;
}

/**
 * The contributions of the rounds whose challenge window is open for a transaction sent at best
 * block `now`: it lands in block `now + 1` at the earliest, and the chain takes it up to
 * `closes` (`ChallengeWindowClosed` after). Oldest round first; none while `now` is unknown.
 */
export function contributionsInWindow(rounds: readonly RoundRow[], window: number, now: number | undefined): OpenContributionRow[] {
  if (now === undefined) return [];
  const out: OpenContributionRow[] = [];
  for (const r of [...rounds].sort((a, b) => a.round - b.round)) {
    if (r.settledAt === undefined || !r.contributions) continue;
    const closes = challengeWindowCloses(r.settledAt, window);
    if (now + 1 > closes) continue;
    for (const c of r.contributions) out.push({ ...c, round: r.round, closes });
  }
  return out;
}

/**
 * Whether `challenger` may dispute it: not yet challenged or audited (`AlreadyChallenged`), and
 * not its own (`CannotChallengeSelf`).
 */
export const canChallenge = (c: ContributionRow, challenger: string) => c.challenged === undefined && c.who !== challenger;

/** Why a participant's lock is wrong: none (or no member's), or less than the spec's minimum. */
export type LockProblem = "missing" | "short";

/**
 * What is wrong with a participant's lock for a live job, if anything. The chain keeps every
 * member of an open or running job locked for exactly `min_provider_stake` (a try-state
 * invariant), so this should never find anything: the page shows it if it ever does. An ended
 * job has released its members' locks, so nothing is expected of them there.
 */
export function lockProblem(job: Pick<JobRow, "status" | "spec">, lock: JobLockRow | undefined): LockProblem | undefined {
  if (job.status !== "Open" && job.status !== "Running") return undefined;
  if (!lock || lock.until !== undefined) return "missing";
  return lock.amount < job.spec.min_provider_stake ? "short" : undefined;
}

/** Stake the participants' locks hold for the job at block `now` (lapsed locks left out). */
export function stakeLocked(participants: JobParticipantRow[], now?: number): bigint {
  return participants.reduce((sum, p) => (p.lock && lockBinds(p.lock, now) ? sum + p.lock.amount : sum), 0n);
}

/** Merges rounds seen in events (`RoundSettled` / `RewardPaid`) into those read from state. */
export function mergeRounds(fromState: RoundRow[], fromEvents: RoundRow[]): RoundRow[] {
  const byRound = new Map<number, RoundRow>();
  for (const r of fromState) byRound.set(r.round, r);
  for (const e of fromEvents) {
    const s = byRound.get(e.round);
    byRound.set(e.round, s ? { ...s, rewards: e.rewards ?? s.rewards } : e);
  }
  return [...byRound.values()].sort((a, b) => a.round - b.round);
}

/** The command that downloads a completed job's model, checked against the chain's hash. */
export function fetchCommand(url: string, id: bigint): string {
  return `grid-trainer job fetch --url ${url} --job ${id} --out model.safetensors`;
}

/** Folds a live `RoundSettled` / `RewardPaid` event into the rounds seen in events. */
export function foldJobEvent(rows: RoundRow[], e: JobEvent): RoundRow[] {
  const existing = rows.find((r) => r.round === e.round);
  const base: RoundRow = existing ?? { round: e.round, paid: 0n, fee: 0n, refunded: 0n };
  const next: RoundRow =
    e.kind === "RoundSettled"
      ? { ...base, resultModelHash: e.resultModelHash, paid: e.paid, fee: e.fee, refunded: e.refunded, settledAt: e.block }
      : { ...base, rewards: [...(base.rewards ?? []), { who: e.who, amount: e.amount }] };
  return [...rows.filter((r) => r !== existing), next].sort((a, b) => a.round - b.round);
}
