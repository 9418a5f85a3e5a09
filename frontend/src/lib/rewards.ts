// A provider's rewards and slashes over time: rewards from chain state (`Jobs.Contributions`,
// with each round's `settled_at` from `RoundResults`: complete, whatever the node prunes),
// slashes from `Providers.Slashed` events (a scan of past blocks and live ones). Pure shaping
// here; `activity.ts` reads the chain.
import type { ChainEventRow } from "./events";
import type { SlashReasonName } from "./providers";

/** One paid contribution (`Contributions`) of the provider. */
export interface RewardEntry {
  job: bigint;
  round: number;
  reward: bigint;
  /** The block the round settled in (`RoundResults.settled_at`), when known. */
  settledAt?: number;
}

export interface SlashEntry {
  block: number;
  reason: SlashReasonName;
  amount: bigint;
}

/** The `Providers.Slashed` events of `who` among `rows`. */
export function slashesOf(rows: readonly ChainEventRow[], who: string): SlashEntry[] {
  const out: SlashEntry[] = [];
  for (const r of rows) {
    if (r.pallet !== "Providers" || r.name !== "Slashed") continue;
    const f = r.fields as { who?: unknown; reason?: { type?: string }; amount?: unknown };
    if (f?.who !== who) continue;
    out.push({ block: r.block, reason: (f.reason?.type ?? "Fraud") as SlashReasonName, amount: f.amount as bigint });
  }
  return out.sort((a, b) => a.block - b.block);
}

export interface CumulativePoint {
  block: number;
  /** Total so far, at and after `block`. */
  total: bigint;
  /** What `block` added. */
  delta: bigint;
}

/** Running totals by block (amounts of one block summed), oldest first; entries without a block left out. */
export function cumulative(entries: readonly { block?: number; amount: bigint }[]): CumulativePoint[] {
  const byBlock = new Map<number, bigint>();
  for (const e of entries) if (e.block !== undefined) byBlock.set(e.block, (byBlock.get(e.block) ?? 0n) + e.amount);
  let total = 0n;
  return [...byBlock]
    .sort(([a], [b]) => a - b)
    .map(([block, delta]) => {
      total += delta;
      return { block, total, delta };
    });
}

export const rewardPoints = (rewards: readonly RewardEntry[]) =>
  cumulative(rewards.map((r) => ({ block: r.settledAt, amount: r.reward })));
export const slashPoints = (slashes: readonly SlashEntry[]) => cumulative(slashes);
