// A job's challenges, votes and slashes as plain rows: open challenges (`Jobs.Challenges`), every
// contribution ever challenged (`Jobs.Challenged`), and the events that tell the rest
// (`ChallengeOpened`, `Voted`, `ChallengeResolved`, `EquivocationPunished`, `Providers.Slashed`),
// from a scan of past blocks and live. Pure, so tests need no node.
import type { ChainEventRow } from "./events";
import type { SlashReasonName } from "./providers";

export type VerdictName = "Valid" | "Invalid";
export type OutcomeName = "FraudProven" | "Rejected" | "Undecided";

export interface CommitteeVote {
  who: string;
  /** Undefined: not voted (yet). */
  verdict?: VerdictName;
}

/** A challenge still open (`Jobs.Challenges`). */
export interface OpenChallengeRow {
  id: bigint;
  job: bigint;
  round: number;
  accused: string;
  challenger: string;
  deposit: bigint;
  committee: CommitteeVote[];
  deadline: number;
}

/** A contribution that was challenged (`Jobs.Challenged`: (job, round, accused) → id). */
export interface ChallengedRow {
  id: bigint;
  job: bigint;
  round: number;
  accused: string;
}

/** A job's challenge, slash or vote seen in a block's events. */
export type JobIncident =
  | {
      kind: "ChallengeOpened";
      block: number;
      id: bigint;
      round: number;
      accused: string;
      challenger: string;
      committee: string[];
      deadline: number;
    }
  | { kind: "Voted"; block: number; id: bigint; who: string; verdict: VerdictName }
  | {
      kind: "ChallengeResolved";
      block: number;
      id: bigint;
      round: number;
      accused: string;
      outcome: OutcomeName;
      slashed: bigint;
      clawedBack: bigint;
      absent: number;
    }
  | { kind: "EquivocationPunished"; block: number; round: number; provider: string; reporter: string; slashed: bigint }
  | { kind: "Slashed"; block: number; who: string; reason: SlashReasonName; amount: bigint; toRecipients: bigint };

/** The events a job's challenge section reads (to keep from scans and live blocks). */
export function isIncidentEvent(e: Pick<ChainEventRow, "pallet" | "name">): boolean {
  return (
    (e.pallet === "Jobs" &&
      ["ChallengeOpened", "Voted", "ChallengeResolved", "EquivocationPunished", "Removed"].includes(e.name)) ||
    (e.pallet === "Providers" && e.name === "Slashed")
  );
}

type F = Record<string, unknown>;
const enumName = (v: unknown) => (v && typeof v === "object" && "type" in v ? String((v as { type: unknown }).type) : String(v));
const asBig = (v: unknown) => (typeof v === "bigint" ? v : BigInt(v as number));

/**
 * The incidents of job `job` among `rows` (oldest first). `Voted` names only the challenge, so
 * it is kept when the challenge is one of `challengeIds` or opened in `rows`. `Providers.Slashed`
 * names no job: it is kept when its block also has an `EquivocationPunished`, `ChallengeResolved`
 * or `Removed` event of this job and the slashed account is named there or in `accounts` (the
 * job's participants and committees).
 */
export function jobIncidentsOf(
  rows: readonly ChainEventRow[],
  job: bigint,
  challengeIds: Iterable<bigint> = [],
  accounts: Iterable<string> = [],
): JobIncident[] {
  const ids = new Set(challengeIds);
  const known = new Set(accounts);
  const slashBlocks = new Map<number, Set<string>>();
  for (const r of rows) {
    const f = r.fields as F;
    if (r.pallet !== "Jobs" || !f || f.job === undefined || asBig(f.job) !== job) continue;
    if (r.name === "ChallengeOpened") {
      ids.add(asBig(f.id));
      for (const m of (f.committee as string[]) ?? []) known.add(m);
    }
    if (r.name === "EquivocationPunished" || r.name === "ChallengeResolved" || r.name === "Removed") {
      const named = slashBlocks.get(r.block) ?? new Set<string>();
      for (const k of ["provider", "accused", "who"]) if (typeof f[k] === "string") named.add(f[k] as string);
      slashBlocks.set(r.block, named);
    }
  }
  const out: JobIncident[] = [];
  for (const r of rows) {
    const f = r.fields as F;
    if (!f || typeof f !== "object") continue;
    const ofJob = f.job !== undefined && asBig(f.job) === job;
    const key = `${r.pallet}.${r.name}`;
    if (key === "Jobs.ChallengeOpened" && ofJob)
      out.push({
        kind: "ChallengeOpened",
        block: r.block,
        id: asBig(f.id),
        round: Number(f.round),
        accused: String(f.accused),
        challenger: String(f.challenger),
        committee: (f.committee as string[]) ?? [],
        deadline: Number(f.deadline),
      });
    else if (key === "Jobs.Voted" && ids.has(asBig(f.id)))
      out.push({ kind: "Voted", block: r.block, id: asBig(f.id), who: String(f.who), verdict: enumName(f.verdict) as VerdictName });
    else if (key === "Jobs.ChallengeResolved" && ofJob)
      out.push({
        kind: "ChallengeResolved",
        block: r.block,
        id: asBig(f.id),
        round: Number(f.round),
        accused: String(f.accused),
        outcome: enumName(f.outcome) as OutcomeName,
        slashed: asBig(f.slashed),
        clawedBack: asBig(f.clawed_back),
        absent: Number(f.absent),
      });
    else if (key === "Jobs.EquivocationPunished" && ofJob)
      out.push({
        kind: "EquivocationPunished",
        block: r.block,
        round: Number(f.round),
        provider: String(f.provider),
        reporter: String(f.reporter),
        slashed: asBig(f.slashed),
      });
    else if (key === "Providers.Slashed") {
      const named = slashBlocks.get(r.block);
      const who = String(f.who);
      if (named && (named.has(who) || known.has(who)))
        out.push({
          kind: "Slashed",
          block: r.block,
          who,
          reason: enumName(f.reason) as SlashReasonName,
          amount: asBig(f.amount),
          toRecipients: asBig(f.to_recipients),
        });
    }
  }
  return out;
}

/** Rows merged from two event lists (a scan and live blocks), oldest first, each (block, index) once. */
export function mergeEventRows(a: readonly ChainEventRow[], b: readonly ChainEventRow[]): ChainEventRow[] {
  const seen = new Set<string>();
  const out: ChainEventRow[] = [];
  for (const r of [...a, ...b]) {
    const k = `${r.block}:${r.index}`;
    if (seen.has(k)) continue;
    seen.add(k);
    out.push(r);
  }
  return out.sort((x, y) => x.block - y.block || x.index - y.index);
}

/** One challenge of the job as the page shows it: open, or decided (outcome when an event told it). */
export interface ChallengeView {
  id: bigint;
  round: number;
  accused: string;
  state: "open" | "decided";
  challenger?: string;
  deposit?: bigint;
  /** Members with their votes (open challenges: from state; decided: from events seen). */
  committee?: CommitteeVote[];
  deadline?: number;
  openedAt?: number;
  outcome?: OutcomeName;
  slashed?: bigint;
  clawedBack?: bigint;
  absent?: number;
  resolvedAt?: number;
}

/**
 * Every challenge of the job: those ever raised (`Challenged`), open ones with their committee
 * and votes from state, and what the events tell (opening, votes, outcome); newest id first.
 */
export function foldChallenges(
  open: readonly OpenChallengeRow[],
  challenged: readonly ChallengedRow[],
  incidents: readonly JobIncident[],
): ChallengeView[] {
  const byId = new Map<bigint, ChallengeView>();
  for (const c of challenged) byId.set(c.id, { id: c.id, round: c.round, accused: c.accused, state: "decided" });
  for (const i of incidents) {
    if (i.kind === "ChallengeOpened") {
      const v = byId.get(i.id) ?? { id: i.id, round: i.round, accused: i.accused, state: "decided" as const };
      byId.set(i.id, {
        ...v,
        challenger: i.challenger,
        committee: v.committee ?? i.committee.map((who) => ({ who })),
        deadline: i.deadline,
        openedAt: i.block,
      });
    } else if (i.kind === "Voted") {
      const v = byId.get(i.id);
      if (v?.committee)
        byId.set(i.id, { ...v, committee: v.committee.map((m) => (m.who === i.who ? { ...m, verdict: i.verdict } : m)) });
    } else if (i.kind === "ChallengeResolved") {
      const v = byId.get(i.id) ?? { id: i.id, round: i.round, accused: i.accused, state: "decided" as const };
      byId.set(i.id, {
        ...v,
        state: "decided",
        outcome: i.outcome,
        slashed: i.slashed,
        clawedBack: i.clawedBack,
        absent: i.absent,
        resolvedAt: i.block,
      });
    }
  }
  // State is the authority on open challenges (and their votes).
  for (const c of open) {
    const v = byId.get(c.id);
    byId.set(c.id, {
      ...v,
      id: c.id,
      round: c.round,
      accused: c.accused,
      state: "open",
      challenger: c.challenger,
      deposit: c.deposit,
      committee: c.committee,
      deadline: c.deadline,
      outcome: undefined,
      resolvedAt: undefined,
    });
  }
  return [...byId.values()].sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
}

/** "Valid 2, Invalid 1, not voted 1" */
export function voteCounts(committee: readonly CommitteeVote[]): { valid: number; invalid: number; notVoted: number } {
  let valid = 0;
  let invalid = 0;
  for (const m of committee) {
    if (m.verdict === "Valid") valid++;
    else if (m.verdict === "Invalid") invalid++;
  }
  return { valid, invalid, notVoted: committee.length - valid - invalid };
}

/** Readable outcome names. */
export const OUTCOME_TEXT: Record<OutcomeName, string> = {
  FraudProven: "fraud proven",
  Rejected: "rejected (contribution valid)",
  Undecided: "undecided (no majority)",
};
