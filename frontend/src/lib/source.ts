// Everything the pages ask of the chain, behind one small interface: the real one wraps the
// typed API; tests pass a fake with plain data.
import type { PolkadotSigner, TxEvent } from "polkadot-api";
import { map, merge, mergeMap, type Observable } from "rxjs";
import { jobConstants, type GridApi, type JobConstants } from "./chain";
import { loadJobDetail, loadJobs, type At, type JobDetail, type JobRow } from "./jobs";
import type { JobSpec } from "./spec";

/** A round settling or a reward paid, for one job, seen in a finalized block. */
export type JobEvent =
  | {
      kind: "RoundSettled";
      block: number;
      round: number;
      resultModelHash?: string;
      paid: bigint;
      fee: bigint;
      refunded: bigint;
    }
  | { kind: "RewardPaid"; block: number; round: number; who: string; amount: bigint };

export interface GridSource {
  jobs(at: At): Promise<JobRow[]>;
  job(id: bigint, at: At): Promise<JobDetail | undefined>;
  constants(): Promise<JobConstants>;
  /** Free balance of an account. */
  free(address: string, at: At): Promise<bigint>;
  jobEvents(id: bigint): Observable<JobEvent>;
  createJob(spec: JobSpec, signer: PolkadotSigner): Observable<TxEvent>;
  cancelJob(id: bigint, signer: PolkadotSigner): Observable<TxEvent>;
}

export function chainSource(api: GridApi): GridSource {
  return {
    jobs: (at) => loadJobs(api, at),
    job: (id, at) => loadJobDetail(api, id, at),
    constants: () => jobConstants(api),
    free: async (address, at) => (await api.query.System.Account.getValue(address, { at })).data.free,
    jobEvents: (id) =>
      merge(
        api.event.Jobs.RoundSettled.watch().pipe(
          map(({ block, events }) =>
            events
              .filter((e) => e.payload.job === id)
              .map(
                ({ payload: p }): JobEvent => ({
                  kind: "RoundSettled",
                  block: block.number,
                  round: p.round,
                  resultModelHash: p.result_model_hash,
                  paid: p.paid,
                  fee: p.fee,
                  refunded: p.refunded,
                }),
              ),
          ),
        ),
        api.event.Jobs.RewardPaid.watch().pipe(
          map(({ block, events }) =>
            events
              .filter((e) => e.payload.job === id)
              .map(
                ({ payload: p }): JobEvent => ({
                  kind: "RewardPaid",
                  block: block.number,
                  round: p.round,
                  who: p.who,
                  amount: p.amount,
                }),
              ),
          ),
        ),
      ).pipe(mergeMap((batch) => batch)),
    createJob: (spec, signer) => api.tx.Jobs.create_job({ spec }).signSubmitAndWatch(signer),
    cancelJob: (id, signer) => api.tx.Jobs.cancel_job({ job: id }).signSubmitAndWatch(signer),
  };
}
