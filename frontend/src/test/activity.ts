// Plain data for the loss curve, challenges and earnings tests.
import type { TrainerStatus } from "../lib/trainer";

/** A trainer of job #1 with three rounds of history. */
export function trainerStatus(patch: Partial<TrainerStatus> = {}): TrainerStatus {
  return {
    name: "bob-gpu",
    peer_id: "12D3KooWabc",
    job: 1,
    round: 3,
    synced: true,
    rounds_contributed: 3,
    utilization: 0.9,
    peers: [],
    finished: false,
    history: [
      { round: 0, unix_ms: 1, train_loss: 4.2, eval_loss: 4.3 },
      { round: 1, unix_ms: 2, train_loss: 3.1, eval_loss: null },
      { round: 2, unix_ms: 3, train_loss: 2.5, eval_loss: 2.9 },
    ],
    ...patch,
  };
}

import { Subject } from "rxjs";
import { vi } from "vitest";
import type { ActivitySource } from "../lib/activity";
import type { BlockEvents } from "../lib/events";
import type { HistoryScan } from "../lib/history";

/** A fake activity source: everything empty unless patched; `blocks` feeds live events. */
export function fakeActivity(patch: Partial<ActivitySource> = {}) {
  const blocks = new Subject<BlockEvents>();
  const emptyScan = (from: number, to: number): HistoryScan => ({
    requested: { from, to },
    covered: { from, to },
    pruned: false,
    truncated: false,
    events: [],
  });
  const source: ActivitySource = {
    roundProofs: vi.fn(async () => []),
    challenges: vi.fn(async () => ({ open: [], challenged: [] })),
    endpoints: vi.fn(async () => new Map<string, string>()),
    trainerStatus: vi.fn(async () => {
      throw new Error("unreachable");
    }),
    finalizedNumber: vi.fn(async () => 100),
    scan: vi.fn(async (from: number, to: number) => emptyScan(from, to)),
    blockEvents: () => blocks,
    providerRewards: vi.fn(async () => []),
    ...patch,
  };
  return { source, blocks };
}
