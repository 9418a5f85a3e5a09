// A job's challenges, audits, votes and slashes as plain rows: open challenges and audits
// (`Jobs.Challenges`), every contribution ever disputed (`Jobs.Challenged`), and the events that
// tell the rest (`ChallengeOpened`, `AuditOpened`, `CommitteeDrawn`, `VoteCommitted`, `Voted`,
// `ChallengeResolved`, `EquivocationPunished`, `Providers.Slashed`), from a scan of past blocks
// and live. Pure, so tests need no node.
//
// A challenge opened at block n has its committee drawn at `draw_at` (empty until then); the
// members commit hidden verdicts until `reveal_from` (or until every member committed), reveal
// them until `deadline`, and it is decided as soon as a strict majority of the committee revealed
// the same verdict and no committed verdict is still hidden, else at the deadline. An audit is a challenge the chain opens by itself on a
// random paid contribution (no challenger, no deposit), its committee drawn in the same block;
// it is decided like any challenge (`ChallengeResolved`).
import type { ChainEventRow } from "./events";
import type { SlashReasonName } from "./providers";

export type VerdictName = "Valid" | "Invalid";
export type OutcomeName = "FraudProven" | "Rejected" | "Undecided";
/** A committee member's ballot: nothing sent, a hidden verdict, or the verdict revealed. */
export type BallotName = "Pending" | "Committed" | "Revealed";

export interface CommitteeVote {
  who: string;
  ballot: BallotName;
  /** The revealed verdict (`ballot` "Revealed" only). */
  verdict?: VerdictName;
}

/** A ballot as PAPI decodes it (`{ type: "Revealed", value: { type: "Valid" } }`), as plain fields. */
export function ballotOf(ballot: unknown): Pick<CommitteeVote, "ballot" | "verdict"> {
  const type = enumName(ballot);
  if (type === "Revealed") return { ballot: "Revealed", verdict: enumName((ballot as { value?: unknown }).value) as VerdictName };
  return { ballot: type === "Committed" ? "Committed" : "Pending" };
}

/** A challenge or audit still open (`Jobs.Challenges`). */
export interface OpenChallengeRow {
  id: bigint;
  job: bigint;
  round: number;
  accused: string;
  /** The chain's random audit: no challenger, no deposit. */
  audit: boolean;
  /** Who challenged, with its deposit on hold (challenges only). */
  challenger?: string;
  deposit?: bigint;
  /** The block the committee is drawn at. */
  drawAt: number;
  /** Members with their ballots; empty until drawn. */
  committee: CommitteeVote[];
  /** The block reveals open at (earlier once every member committed). */
  revealFrom: number;
  deadline: number;
}

/** A challenge's `accuser` as PAPI decodes it (`{ type: "Challenger", value: { who, deposit } }` or
 * `{ type: "Audit" }`), as plain fields. */
export function accuserOf(accuser: unknown): Pick<OpenChallengeRow, "audit" | "challenger" | "deposit"> {
  if (enumName(accuser) !== "Challenger") return { audit: true };
  const { who, deposit } = ((accuser as { value?: unknown }).value ?? {}) as F;
  return { audit: false, challenger: String(who), deposit: asBig(deposit) };
}

/** A contribution that was disputed (`Jobs.Challenged`: (job, round, accused) → id), by a challenge or an audit. */
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
      drawAt: number;
      deadline: number;
    }
  /** The chain audits a paid contribution; its committee is drawn in the same block. */
  | { kind: "AuditOpened"; block: number; id: bigint; round: number; accused: string; deadline: number }
  | { kind: "CommitteeDrawn"; block: number; id: bigint; committee: string[]; revealFrom: number }
  | { kind: "VoteCommitted"; block: number; id: bigint; who: string }
  /** A revealed vote. */
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
      ["ChallengeOpened", "AuditOpened", "CommitteeDrawn", "VoteCommitted", "Voted", "ChallengeResolved", "EquivocationPunished", "Removed"].includes(
        e.name,
      )) ||
    (e.pallet === "Providers" && e.name === "Slashed")
  );
}

type F = Record<string, unknown>;
function enumName(v: unknown): string {
  return v && typeof v === "object" && "type" in v ? String((v as { type: unknown }).type) : String(v);
}
const asBig = (v: unknown) => (typeof v === "bigint" ? v : BigInt(v as number));
const strings = (v: unknown) => (Array.isArray(v) ? v.map(String) : []);

/**
 * The incidents of job `job` among `rows` (oldest first). `CommitteeDrawn`, `VoteCommitted` and
 * `Voted` name only the challenge, so they are kept when the challenge is one of `challengeIds`
 * or opened in `rows` (`ChallengeOpened`, `AuditOpened`). `Providers.Slashed` names no job: it
 * is kept when its block also has an `EquivocationPunished`, `ChallengeResolved` or `Removed`
 * event of this job and the slashed account is named there or in `accounts` (the job's
 * participants and committees, with those drawn in `rows`).
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
    if (r.pallet !== "Jobs" || !f || typeof f !== "object") continue;
    if (r.name === "CommitteeDrawn" && f.id !== undefined && ids.has(asBig(f.id))) {
      for (const m of strings(f.committee)) known.add(m);
      continue;
    }
    if (f.job === undefined || asBig(f.job) !== job) continue;
    if (r.name === "ChallengeOpened" || r.name === "AuditOpened") ids.add(asBig(f.id));
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
    const ofChallenge = f.id !== undefined && ids.has(asBig(f.id));
    const key = `${r.pallet}.${r.name}`;
    if (key === "Jobs.ChallengeOpened" && ofJob)
      out.push({
        kind: "ChallengeOpened",
        block: r.block,
        id: asBig(f.id),
        round: Number(f.round),
        accused: String(f.accused),
        challenger: String(f.challenger),
        drawAt: Number(f.draw_at),
        deadline: Number(f.deadline),
      });
    else if (key === "Jobs.AuditOpened" && ofJob)
      out.push({
        kind: "AuditOpened",
        block: r.block,
        id: asBig(f.id),
        round: Number(f.round),
        accused: String(f.accused),
        deadline: Number(f.deadline),
      });
    else if (key === "Jobs.CommitteeDrawn" && ofChallenge)
      out.push({ kind: "CommitteeDrawn", block: r.block, id: asBig(f.id), committee: strings(f.committee), revealFrom: Number(f.reveal_from) });
    else if (key === "Jobs.VoteCommitted" && ofChallenge)
      out.push({ kind: "VoteCommitted", block: r.block, id: asBig(f.id), who: String(f.who) });
    else if (key === "Jobs.Voted" && ofChallenge)
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
  /** A random audit by the chain (known from state or its `AuditOpened` event). */
  audit?: boolean;
  challenger?: string;
  deposit?: bigint;
  /** The block the committee is (or was) drawn at. */
  drawAt?: number;
  /** Members with their ballots (open challenges: from state, empty until drawn; decided: from events seen). */
  committee?: CommitteeVote[];
  revealFrom?: number;
  deadline?: number;
  openedAt?: number;
  /** The block a `CommitteeDrawn` event was read in. */
  drawnAt?: number;
  outcome?: OutcomeName;
  slashed?: bigint;
  clawedBack?: bigint;
  absent?: number;
  resolvedAt?: number;
}

/**
 * Every challenge and audit of the job: those ever raised (`Challenged`), open ones with their
 * committee and ballots from state, and what the events tell (opening, draw, commitments,
 * revealed votes, outcome); newest id first.
 */
export function foldChallenges(
  open: readonly OpenChallengeRow[],
  challenged: readonly ChallengedRow[],
  incidents: readonly JobIncident[],
): ChallengeView[] {
  const byId = new Map<bigint, ChallengeView>();
  for (const c of challenged) byId.set(c.id, { id: c.id, round: c.round, accused: c.accused, state: "decided" });
  const vote = (id: bigint, who: string, ballot: Pick<CommitteeVote, "ballot" | "verdict">, onlyPending: boolean) => {
    const v = byId.get(id);
    if (v?.committee)
      byId.set(id, {
        ...v,
        committee: v.committee.map((m) => (m.who === who && (!onlyPending || m.ballot === "Pending") ? { who, ...ballot } : m)),
      });
  };
  for (const i of incidents) {
    if (i.kind === "ChallengeOpened") {
      const v = byId.get(i.id) ?? { id: i.id, round: i.round, accused: i.accused, state: "decided" as const };
      byId.set(i.id, { ...v, challenger: i.challenger, drawAt: i.drawAt, deadline: i.deadline, openedAt: i.block });
    } else if (i.kind === "AuditOpened") {
      // Drawn in the block that opened it.
      const v = byId.get(i.id) ?? { id: i.id, round: i.round, accused: i.accused, state: "decided" as const };
      byId.set(i.id, { ...v, audit: true, drawAt: i.block, deadline: i.deadline, openedAt: i.block });
    } else if (i.kind === "CommitteeDrawn") {
      const v = byId.get(i.id);
      if (v)
        byId.set(i.id, {
          ...v,
          committee: v.committee ?? i.committee.map((who) => ({ who, ballot: "Pending" as const })),
          revealFrom: i.revealFrom,
          drawnAt: i.block,
        });
    } else if (i.kind === "VoteCommitted") vote(i.id, i.who, { ballot: "Committed" }, true);
    else if (i.kind === "Voted") vote(i.id, i.who, { ballot: "Revealed", verdict: i.verdict }, false);
    else if (i.kind === "ChallengeResolved") {
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
  // State is the authority on open challenges (and their ballots).
  for (const c of open) {
    const v = byId.get(c.id);
    byId.set(c.id, {
      ...v,
      id: c.id,
      round: c.round,
      accused: c.accused,
      state: "open",
      audit: c.audit,
      challenger: c.challenger,
      deposit: c.deposit,
      drawAt: c.drawAt,
      committee: c.committee,
      revealFrom: c.revealFrom,
      deadline: c.deadline,
      outcome: undefined,
      resolvedAt: undefined,
    });
  }
  return [...byId.values()].sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
}

/** How many members revealed Invalid, Valid, committed a hidden verdict, or sent nothing. */
export function voteCounts(committee: readonly CommitteeVote[]): { invalid: number; valid: number; committed: number; pending: number } {
  const n = { invalid: 0, valid: 0, committed: 0, pending: 0 };
  for (const m of committee) {
    if (m.ballot === "Revealed" && m.verdict === "Invalid") n.invalid++;
    else if (m.ballot === "Revealed") n.valid++;
    else if (m.ballot === "Committed") n.committed++;
    else n.pending++;
  }
  return n;
}

/** A ballot as the page shows it: "pending", "committed (hidden)", "Valid" or "Invalid". */
export function ballotText(m: Pick<CommitteeVote, "ballot" | "verdict">): string {
  return m.ballot === "Revealed" ? (m.verdict ?? "revealed") : m.ballot === "Committed" ? "committed (hidden)" : "pending";
}

export type ChallengePhaseName = "draw" | "commit" | "reveal" | "closed";

/**
 * Where an open challenge stands at block `now` (unknown: from its ballots only), and the block
 * that phase ends at: awaiting its draw (`draw_at`), committing (until `reveal_from`, or until
 * every member committed), revealing (until `deadline`), or past its deadline, to be decided.
 */
export function challengePhase(
  c: Pick<ChallengeView, "drawAt" | "committee" | "revealFrom" | "deadline">,
  now?: number,
): { phase: ChallengePhaseName; until?: number } {
  if (now !== undefined && c.deadline !== undefined && now >= c.deadline) return { phase: "closed", until: c.deadline };
  const committee = c.committee ?? [];
  if (committee.length === 0) return { phase: "draw", until: c.drawAt };
  const allCommitted = committee.every((m) => m.ballot !== "Pending");
  if (allCommitted || (now !== undefined && c.revealFrom !== undefined && now >= c.revealFrom))
    return { phase: "reveal", until: c.deadline };
  return { phase: "commit", until: c.revealFrom };
}

/** "committing until #40 (5 blocks left)", "awaiting the committee draw at #12", "revealing until #60", … */
export function phaseText(c: Pick<ChallengeView, "drawAt" | "committee" | "revealFrom" | "deadline">, now?: number): string {
  const { phase, until } = challengePhase(c, now);
  const at = until === undefined ? "?" : `#${until}`;
  const left = now !== undefined && until !== undefined ? (until > now ? ` (${until - now} blocks left)` : " (due)") : "";
  switch (phase) {
    case "draw":
      return `awaiting the committee draw at ${at}${left}`;
    case "commit":
      return `committing until ${at}${left}`;
    case "reveal":
      return `revealing until ${at}${left}`;
    case "closed":
      return `voting closed at ${at}, to be decided`;
  }
}

/** Readable outcome names. */
export const OUTCOME_TEXT: Record<OutcomeName, string> = {
  FraudProven: "fraud proven",
  Rejected: "rejected (contribution valid)",
  Undecided: "undecided (no majority)",
};
