// Loss curves of a job: eval and train loss per round from the participants' trainers
// (`/status` `history`), and train loss from the proofs on chain (`round_proofs`,
// `train_loss_micros`), accumulated while the page is open. Pure, so tests need no node.
import type { TrainerStatus } from "./trainer";

/** One proof's training loss, as submitted on chain. */
export interface ProofLoss {
  round: number;
  provider: string;
  /** Mean training loss over the round (`train_loss_micros` / 1e6). */
  trainLoss: number;
}

/** The open round's proofs read at one block, added to those kept (a proof is read once per (round, provider)). */
export function foldProofLosses(kept: readonly ProofLoss[], fresh: readonly ProofLoss[]): ProofLoss[] {
  const byKey = new Map<string, ProofLoss>();
  for (const p of [...kept, ...fresh]) byKey.set(`${p.round}:${p.provider}`, p);
  return [...byKey.values()].sort((a, b) => a.round - b.round || (a.provider < b.provider ? -1 : 1));
}

/** A participant's trainer as last polled. */
export interface TrainerReading {
  who: string;
  endpoint?: string;
  status?: TrainerStatus;
  /** Why it could not be read (or is not used). */
  error?: string;
}

export interface Point {
  x: number;
  y: number;
}

export interface LossSeries {
  id: string;
  label: string;
  /** Where its points come from, for the legend. */
  source: string;
  kind: "eval" | "train";
  points: Point[];
}

const short = (who: string) => (who.length > 16 ? `${who.slice(0, 6)}…${who.slice(-4)}` : who);

/**
 * A trainer's reading is used when its status is for `job`; otherwise the reason why not.
 */
export function trainerProblem(r: TrainerReading, job: bigint): string | undefined {
  if (r.error) return r.error;
  if (!r.status) return "not read yet";
  if (BigInt(r.status.job) !== job) return `it serves job #${r.status.job}, not this one`;
  if (!r.status.history) return "its trainer reports no loss history (an older version)";
  return undefined;
}

/** The series to draw: per trainer its eval and train loss, and the mean train loss of the proofs on chain. */
export function lossSeries(trainers: readonly TrainerReading[], proofs: readonly ProofLoss[], job: bigint): LossSeries[] {
  const out: LossSeries[] = [];
  for (const t of trainers) {
    if (trainerProblem(t, job) || !t.status?.history) continue;
    const name = t.status.name || short(t.who);
    const evalPoints: Point[] = [];
    const trainPoints: Point[] = [];
    for (const p of t.status.history) {
      if (typeof p.eval_loss === "number" && Number.isFinite(p.eval_loss)) evalPoints.push({ x: p.round, y: p.eval_loss });
      if (typeof p.train_loss === "number" && Number.isFinite(p.train_loss)) trainPoints.push({ x: p.round, y: p.train_loss });
    }
    const source = `trainer /status of ${short(t.who)}`;
    if (evalPoints.length) out.push({ id: `eval:${t.who}`, label: `eval loss, ${name}`, source, kind: "eval", points: sortX(evalPoints) });
    if (trainPoints.length) out.push({ id: `train:${t.who}`, label: `train loss, ${name}`, source, kind: "train", points: sortX(trainPoints) });
  }
  const byRound = new Map<number, number[]>();
  for (const p of proofs) byRound.set(p.round, [...(byRound.get(p.round) ?? []), p.trainLoss]);
  if (byRound.size)
    out.push({
      id: "train:chain",
      label: "train loss, proofs on chain (mean)",
      source: "submit_proof train_loss_micros (round_proofs)",
      kind: "train",
      points: sortX([...byRound].map(([x, ys]) => ({ x, y: ys.reduce((s, y) => s + y, 0) / ys.length }))),
    });
  return out;
}

function sortX(points: Point[]): Point[] {
  const byX = new Map<number, Point>();
  for (const p of points) byX.set(p.x, p);
  return [...byX.values()].sort((a, b) => a.x - b.x);
}
