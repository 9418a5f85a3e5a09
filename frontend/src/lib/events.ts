// Chain events as the network view's feed shows them: every event of a finalized block
// (`System.Events`), as plain rows and readable one-liners. Pure, so tests need no node.
import { shortAddress, shortHash } from "./format";
import { formatScore } from "./providers";
import { formatGrid } from "./units";

/** One event of a block: `pallet.name` and its fields as PAPI decodes them. */
export interface ChainEventRow {
  block: number;
  /** Position in the block's `System.Events`. */
  index: number;
  pallet: string;
  name: string;
  fields: unknown;
}

/** The events of one finalized block. */
export interface BlockEvents {
  block: number;
  hash: string;
  events: ChainEventRow[];
}

/** What `System.Events` holds, as far as the feed reads it (PAPI's nested enums). */
export interface EventRecordLike {
  event: { type: string; value: { type: string; value?: unknown } };
}

/** A block's `System.Events` as rows. */
export function eventRowsOf(block: number, records: readonly EventRecordLike[]): ChainEventRow[] {
  return records.map((r, index) => ({
    block,
    index,
    pallet: r.event.type,
    name: r.event.value.type,
    fields: r.event.value.value,
  }));
}

/** Fee withdrawals and their burning (`Balances.BurnedDebt`), part of every signed extrinsic. */
const NOISY_BALANCES = new Set(["Withdraw", "BurnedDebt"]);

/** Bookkeeping every extrinsic emits (fees, success), hidden unless "show all events". */
export function isNoisy(e: Pick<ChainEventRow, "pallet" | "name">): boolean {
  return e.pallet === "System" || e.pallet === "TransactionPayment" || (e.pallet === "Balances" && NOISY_BALANCES.has(e.name));
}

/** The most events the feed shows. */
export const MAX_FEED = 50;
/** The most events kept (so that hiding the noisy ones still leaves a full feed). */
export const MAX_KEPT = 500;

/** Adds a block's events, newest first (later blocks, then later positions), at most `max` kept; a block seen before is skipped. */
export function foldBlockEvents(rows: ChainEventRow[], batch: BlockEvents, max = MAX_KEPT): ChainEventRow[] {
  if (rows.some((r) => r.block === batch.block)) return rows;
  const fresh = [...batch.events].sort((a, b) => b.index - a.index);
  return [...fresh, ...rows].sort((a, b) => b.block - a.block || b.index - a.index).slice(0, max);
}

/** Events of several blocks (oldest first, as a history scan returns them) as one batch each. */
export function blockBatches(rows: ChainEventRow[]): BlockEvents[] {
  const batches = new Map<number, BlockEvents>();
  for (const row of rows) {
    const batch = batches.get(row.block) ?? { block: row.block, hash: "", events: [] };
    batch.events.push(row);
    batches.set(row.block, batch);
  }
  return [...batches.values()];
}

/** The events the feed shows: newest first, noisy ones only with `showAll`, at most `max`. */
export function visibleEvents(rows: ChainEventRow[], showAll: boolean, max = MAX_FEED): ChainEventRow[] {
  return (showAll ? rows : rows.filter((r) => !isNoisy(r))).slice(0, max);
}

const SS58 = /^[1-9A-HJ-NP-Za-km-z]{46,50}$/;
const AMOUNT_KEY = /amount|fee|tip|budget|paid|refunded|slashed|stake|free|reserved|balance|clawed_back|to_recipients/;

/** A field's value as short text: accounts and hashes shortened, amounts in GRID, enums by name. */
export function formatValue(value: unknown, key = ""): string {
  if (value === undefined || value === null) return "—";
  if (typeof value === "bigint") return AMOUNT_KEY.test(key) ? formatGrid(value) : value.toString();
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (typeof value === "string") {
    if (SS58.test(value)) return shortAddress(value);
    if (/^0x[0-9a-f]*$/i.test(value)) return shortHash(value);
    return value;
  }
  if (value instanceof Uint8Array) return shortHash(`0x${[...value].map((b) => b.toString(16).padStart(2, "0")).join("")}`);
  if (Array.isArray(value)) return value.length > 3 ? `${value.length} items` : `[${value.map((v) => formatValue(v, key)).join(", ")}]`;
  if (typeof value === "object") {
    const o = value as Record<string, unknown>;
    if (typeof o.type === "string" && Object.keys(o).every((k) => k === "type" || k === "value"))
      return o.value === undefined ? o.type : `${o.type}(${formatValue(o.value, key)})`;
    if (typeof (o as { asHex?: unknown }).asHex === "function") return shortHash((o as { asHex: () => string }).asHex());
    return Object.entries(o)
      .map(([k, v]) => `${k} ${formatValue(v, k)}`)
      .join(", ");
  }
  return String(value);
}

type Fields = Record<string, unknown>;

const who = (v: unknown) => (typeof v === "string" ? shortAddress(v) : formatValue(v));
const grid = (v: unknown) => (typeof v === "bigint" ? formatGrid(v) : formatValue(v));
const id = (v: unknown) => `#${formatValue(v)}`;
const hash = (v: unknown) => (typeof v === "string" ? shortHash(v) : formatValue(v));
const name = (v: unknown) => (v && typeof v === "object" && "type" in v ? String((v as { type: unknown }).type) : formatValue(v));

/** The readable part of known events, by `pallet.name`. */
const DESCRIBE: Record<string, (f: Fields) => string> = {
  "Jobs.JobCreated": (f) => `job ${id(f.job)} by ${who(f.buyer)}, budget ${grid(f.budget)}`,
  "Jobs.Joined": (f) => `job ${id(f.job)}: ${who(f.who)} joined from round ${formatValue(f.from_round)}`,
  "Jobs.Left": (f) => `job ${id(f.job)}: ${who(f.who)} left`,
  "Jobs.Removed": (f) => `job ${id(f.job)}: ${who(f.who)} removed (${name(f.reason)})`,
  "Jobs.JobStarted": (f) => `job ${id(f.job)} started`,
  "Jobs.RoundOpened": (f) =>
    `job ${id(f.job)} round ${formatValue(f.round)} open until #${formatValue(f.deadline)}, ${formatValue(f.members)} members`,
  "Jobs.ProofAccepted": (f) =>
    `job ${id(f.job)} round ${formatValue(f.round)}: proof from ${who(f.provider)} (${hash(f.result_model_hash)})`,
  "Jobs.QuorumReached": (f) => `job ${id(f.job)} round ${formatValue(f.round)}: quorum on ${hash(f.result_model_hash)}`,
  "Jobs.RewardPaid": (f) => `job ${id(f.job)} round ${formatValue(f.round)}: ${grid(f.amount)} to ${who(f.who)}`,
  "Jobs.RoundSettled": (f) =>
    `job ${id(f.job)} round ${formatValue(f.round)} settled${f.result_model_hash === undefined ? " without quorum" : ""}: paid ${grid(f.paid)}, fee ${grid(f.fee)}, refunded ${grid(f.refunded)}`,
  "Jobs.JobCompleted": (f) =>
    `job ${id(f.job)} completed${f.final_model_hash === undefined ? "" : ` (model ${hash(f.final_model_hash)})`}`,
  "Jobs.CancelScheduled": (f) => `job ${id(f.job)} cancelled by its buyer: it ends when round ${f.round} settles`,
  "Jobs.JobCancelled": (f) => `job ${id(f.job)} cancelled, ${grid(f.refunded)} refunded`,
  "Jobs.JobAbandoned": (f) => `job ${id(f.job)} abandoned (too few providers, or no quorum), ${grid(f.refunded)} refunded`,
  "Jobs.JobUnfilled": (f) => `job ${id(f.job)} never filled, ${grid(f.refunded)} refunded`,
  "Jobs.EquivocationPunished": (f) =>
    `job ${id(f.job)} round ${formatValue(f.round)}: ${who(f.provider)} slashed ${grid(f.slashed)} for equivocation, reported by ${who(f.reporter)}`,
  "Jobs.ChallengeOpened": (f) =>
    `challenge ${id(f.id)} on job ${id(f.job)} round ${formatValue(f.round)}: ${who(f.accused)} accused by ${who(f.challenger)}, committee drawn at #${formatValue(f.draw_at)}, voting until #${formatValue(f.deadline)}`,
  "Jobs.AuditOpened": (f) =>
    `audit ${id(f.id)} of job ${id(f.job)} round ${formatValue(f.round)}: ${who(f.accused)}'s update, judged by a committee drawn now, voting until #${formatValue(f.deadline)}`,
  "Jobs.CommitteeDrawn": (f) =>
    `challenge ${id(f.id)}: committee of ${Array.isArray(f.committee) ? f.committee.length : "?"} drawn, committing until #${formatValue(f.reveal_from)}`,
  "Jobs.VoteCommitted": (f) => `challenge ${id(f.id)}: ${who(f.who)} committed a hidden verdict`,
  "Jobs.Voted": (f) => `challenge ${id(f.id)}: ${who(f.who)} revealed ${name(f.verdict)}`,
  "Jobs.ChallengeResolved": (f) =>
    `challenge ${id(f.id)} on job ${id(f.job)} round ${formatValue(f.round)}: ${who(f.accused)} ${name(f.outcome)}, slashed ${grid(f.slashed)}, clawed back ${grid(f.clawed_back)}, ${formatValue(f.absent)} absent`,
  "Jobs.WorkerReported": (f) =>
    `validator ${hash(f.validator)} at #${formatValue(f.at)}: ${formatValue(f.probes)} probes, ${formatValue(f.settled)} settled`,
  "Providers.Registered": (f) => `${who(f.who)} registered with ${grid(f.stake)}`,
  "Providers.Updated": (f) => `${who(f.who)} updated its record`,
  "Providers.Bonded": (f) => `${who(f.who)} bonded ${grid(f.amount)}`,
  "Providers.Unbonding": (f) => `${who(f.who)} unbonding ${grid(f.amount)}, unlocks at #${formatValue(f.unlock_at)}`,
  "Providers.Withdrawn": (f) => `${who(f.who)} withdrew ${grid(f.amount)}`,
  "Providers.Deregistered": (f) => `${who(f.who)} deregistered`,
  "Providers.Evicted": (f) => `${who(f.who)} lost its seat to ${who(f.by)}, its stake released`,
  "Providers.Slashed": (f) =>
    `${who(f.who)} slashed ${grid(f.amount)} (${name(f.reason)}), ${grid(f.to_recipients)} to recipients`,
  "Providers.Probed": (f) => `${who(f.who)} probed: ${f.ok ? `ok, ${formatValue(f.latency_ms)} ms` : "failed"}`,
  "Providers.HealthChanged": (f) =>
    `${who(f.who)} health score ${typeof f.score === "number" ? formatScore(f.score) : formatValue(f.score)}`,
  "Balances.Transfer": (f) => `${who(f.from)} → ${who(f.to)}: ${grid(f.amount)}`,
};

/** The fields of an event as text: known events by their template, others field by field. */
export function describeEvent(e: Pick<ChainEventRow, "pallet" | "name" | "fields">): string {
  const known = DESCRIBE[`${e.pallet}.${e.name}`];
  const f = e.fields;
  if (known && f && typeof f === "object") return known(f as Fields);
  return f === undefined ? "" : formatValue(f);
}

/** `#12 Jobs.JobCreated: job #3 by 5GrwvaEF…oHGKutQY, budget 151.5 GRID` */
export function formatEvent(e: ChainEventRow): string {
  const detail = describeEvent(e);
  return `#${e.block} ${e.pallet}.${e.name}${detail ? `: ${detail}` : ""}`;
}
