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
