// What the job page's loss curve and challenges, and the provider page's rewards-over-time
// chart, ask of the chain and of the trainers, behind one small interface: the real one wraps
// the typed API, the client's JSON-RPC (history scan) and `fetch`; tests pass a fake.
import type { PolkadotClient } from "polkadot-api";
import type { Observable } from "rxjs";
import type { GridApi } from "./chain";
import { accuserOf, ballotOf, type ChallengedRow, type OpenChallengeRow } from "./challenges";
import type { BlockEvents, ChainEventRow } from "./events";
import { chainHistoryRpc, scanHistory, type HistoryScan } from "./history";
import type { ProofLoss } from "./losses";
import { text } from "./providers";
import type { RewardEntry } from "./rewards";
import { chainNetworkSource } from "./source";
import { fetchTrainerStatus, type TrainerStatus } from "./trainer";

export interface ActivitySource {
  /** Training losses of the proofs in the job's open round (`round_proofs`). */
  roundProofs(job: bigint, at: string): Promise<ProofLoss[]>;
  /** The job's open challenges and audits (`Challenges`) and every contribution of it ever disputed (`Challenged`). */
  challenges(job: bigint, at: string): Promise<{ open: OpenChallengeRow[]; challenged: ChallengedRow[] }>;
  /** Registered endpoints of these providers (those not registered any more are left out). */
  endpoints(who: readonly string[], at: string): Promise<Map<string, string>>;
  /** A trainer's `/status`; rejects with the reason it cannot be read. */
  trainerStatus(endpoint: string): Promise<TrainerStatus>;
  /** The latest finalized block's number. */
  finalizedNumber(): Promise<number>;
  /** Events of past blocks `to` down to `from` (bounded, stops where state is pruned). */
  scan(from: number, to: number, keep: (e: ChainEventRow) => boolean, signal?: AbortSignal): Promise<HistoryScan>;
  /** Every event of each new finalized block. */
  blockEvents(): Observable<BlockEvents>;
  /** The provider's paid contributions with their rounds' settlement blocks. */
  providerRewards(who: string, at: string): Promise<RewardEntry[]>;
}

export function chainActivitySource(api: GridApi, client: PolkadotClient): ActivitySource {
  const rpc = chainHistoryRpc(client);
  const network = chainNetworkSource(api, client);
  return {
    roundProofs: async (job, at) =>
      (await api.view.Jobs.round_proofs(job, { at })).map(({ proof }) => ({
        round: proof.round,
        provider: proof.provider,
        trainLoss: proof.train_loss_micros / 1e6,
      })),
    challenges: async (job, at) => {
      const [open, challenged] = await Promise.all([
        api.query.Jobs.Challenges.getEntries({ at }),
        api.query.Jobs.Challenged.getEntries({ at }),
      ]);
      return {
        open: open
          .filter(({ value }) => value.job === job)
          .map(({ keyArgs: [id], value: c }) => ({
            id,
            job: c.job,
            round: c.round,
            accused: c.accused,
            ...accuserOf(c.accuser),
            drawAt: c.draw_at,
            committee: c.committee.map(([who, ballot]) => ({ who, ...ballotOf(ballot) })),
            revealFrom: c.reveal_from,
            deadline: c.deadline,
          })),
        challenged: challenged
          .filter(({ keyArgs: [[j]] }) => j === job)
          .map(({ keyArgs: [[j, round], accused], value: id }) => ({ id, job: j, round, accused })),
      };
    },
    endpoints: async (who, at) => {
      const views = await Promise.all(who.map((w) => api.view.Providers.provider(w, { at })));
      const out = new Map<string, string>();
      views.forEach((v, i) => v && out.set(who[i]!, text(v.provider.endpoint)));
      return out;
    },
    trainerStatus: (endpoint) => fetchTrainerStatus(endpoint),
    finalizedNumber: async () => (await client.getFinalizedBlock()).number,
    scan: (from, to, keep, signal) => scanHistory(rpc, { from, to, keep, signal }),
    blockEvents: () => network.blockEvents(),
    providerRewards: async (who, at) => {
      const entries = await api.query.Jobs.Contributions.getEntries({ at });
      // A zero reward is a claim of another's update (a copy), kept to be disputed: not earned.
      const mine = entries.filter(({ keyArgs: [, provider], value }) => provider === who && value.reward > 0n);
      const rounds = mine.map(({ keyArgs: [[job, round]] }) => [job, round] as [bigint, number]);
      const summaries = rounds.length ? await api.query.Jobs.RoundResults.getValues(rounds, { at }) : [];
      return mine.map(({ keyArgs: [[job, round]], value }, i) => ({
        job,
        round,
        reward: value.reward,
        settledAt: summaries[i]?.settled_at,
      }));
    },
  };
}
