// Everything the pages ask of the chain, behind one small interface: the real one wraps the
// typed API; tests pass a fake with plain data.
import type { PolkadotClient, PolkadotSigner, SizedHex, TxEvent } from "polkadot-api";
import { catchError, concatMap, EMPTY, from, map, merge, mergeMap, type Observable } from "rxjs";
import { jobConstants, type GridApi, type JobConstants } from "./chain";
import { eventRowsOf, type BlockEvents } from "./events";
import { chainHistoryRpc, scanHistory, type HistoryScan } from "./history";
import { loadJobDetail, loadJobs, type At, type JobDetail, type JobRow } from "./jobs";
import {
  loadProvider,
  loadProviderJobs,
  loadProviders,
  providerConstants,
  type CapabilitiesRow,
  type ProviderConstants,
  type ProviderEvent,
  type ProviderJobRow,
  type ProviderRow,
} from "./providers";
import type { Admission } from "./admission";
import type { ProviderUpdate, Registration } from "./registration";
import type { JobSpec } from "./spec";
import { fetchTrainerStatus, type TrainerStatus } from "./trainer";

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
  /** `Jobs.create_job` with the buyer's admission rules (`OPEN_ADMISSION`: anyone with the stake). */
  createJob(spec: JobSpec, admission: Admission, signer: PolkadotSigner): Observable<TxEvent>;
  cancelJob(id: bigint, signer: PolkadotSigner): Observable<TxEvent>;
  /**
   * `Jobs.challenge`: disputes `provider`'s contribution to settled `round` of `job` within the
   * job's challenge window (the buyer or a registered provider; holds `ChallengeDeposit`, pays
   * `ChallengeFee`).
   */
  challenge(job: bigint, round: number, provider: string, signer: PolkadotSigner): Observable<TxEvent>;
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
    createJob: (spec, admission, signer) => api.tx.Jobs.create_job({ spec, admission }).signSubmitAndWatch(signer),
    cancelJob: (id, signer) => api.tx.Jobs.cancel_job({ job: id }).signSubmitAndWatch(signer),
    challenge: (job, round, provider, signer) => api.tx.Jobs.challenge({ job, round, provider }).signSubmitAndWatch(signer),
  };
}

/** What the provider pages ask of the chain; tests pass a fake. */
export interface ProviderSource {
  providers(at: At): Promise<ProviderRow[]>;
  provider(who: string, at: At): Promise<ProviderRow | undefined>;
  /** The jobs `who` participates in, with its earnings there. */
  providerJobs(who: string, at: At): Promise<ProviderJobRow[]>;
  constants(): Promise<ProviderConstants>;
  free(address: string, at: At): Promise<bigint>;
  /** `RewardPaid` and `Slashed` events for `who`. */
  events(who: string): Observable<ProviderEvent>;
  bondMore(amount: bigint, signer: PolkadotSigner): Observable<TxEvent>;
  unbond(amount: bigint, signer: PolkadotSigner): Observable<TxEvent>;
  withdrawUnbonded(signer: PolkadotSigner): Observable<TxEvent>;
}

export function chainProviderSource(api: GridApi): ProviderSource {
  return {
    providers: (at) => loadProviders(api, at),
    provider: (who, at) => loadProvider(api, who, at),
    providerJobs: (who, at) => loadProviderJobs(api, who, at),
    constants: () => providerConstants(api),
    free: async (address, at) => (await api.query.System.Account.getValue(address, { at })).data.free,
    events: (who) =>
      merge(
        api.event.Jobs.RewardPaid.watch().pipe(
          map(({ block, events }) =>
            events
              .filter((e) => e.payload.who === who)
              .map(
                ({ payload: p }): ProviderEvent => ({
                  kind: "RewardPaid",
                  block: block.number,
                  job: p.job,
                  round: p.round,
                  amount: p.amount,
                }),
              ),
          ),
        ),
        api.event.Providers.Slashed.watch().pipe(
          map(({ block, events }) =>
            events
              .filter((e) => e.payload.who === who)
              .map(
                ({ payload: p }): ProviderEvent => ({
                  kind: "Slashed",
                  block: block.number,
                  reason: p.reason.type,
                  amount: p.amount,
                  toRecipients: p.to_recipients,
                }),
              ),
          ),
        ),
      ).pipe(mergeMap((batch) => batch)),
    bondMore: (amount, signer) => api.tx.Providers.bond_more({ amount }).signSubmitAndWatch(signer),
    unbond: (amount, signer) => api.tx.Providers.unbond({ amount }).signSubmitAndWatch(signer),
    withdrawUnbonded: (signer) => api.tx.Providers.withdraw_unbonded().signSubmitAndWatch(signer),
  };
}

/** What the network view asks of the chain; tests pass a fake. */
export interface NetworkSource {
  providers(at: At): Promise<ProviderRow[]>;
  /** Every event (`System.Events`) of each new finalized block, in block order. */
  blockEvents(): Observable<BlockEvents>;
  /** The events of the last `blocks` finalized blocks, as far as the node kept their state. */
  pastEvents?(blocks: number): Promise<HistoryScan>;
}

export function chainNetworkSource(api: GridApi, client: PolkadotClient): NetworkSource {
  return {
    providers: (at) => loadProviders(api, at),
    blockEvents: () =>
      client.finalizedBlock$.pipe(
        concatMap((b) =>
          from(api.query.System.Events.getValue({ at: b.hash })).pipe(
            map((records): BlockEvents => ({ block: b.number, hash: b.hash, events: eventRowsOf(b.number, records) })),
            // A block unpinned before its events were read is skipped; the feed goes on.
            catchError(() => EMPTY),
          ),
        ),
      ),
    pastEvents: async (blocks) => {
      const to = (await client.getFinalizedBlock()).number;
      return scanHistory(chainHistoryRpc(client), { from: to - blocks + 1, to });
    },
  };
}

/** Text the chain keeps as bytes (`Uint8Array.from`: an array from another realm, jsdom's, fails PAPI's check). */
const textBytes = (text: string) => Uint8Array.from(new TextEncoder().encode(text));

/** Capabilities as `Providers.register` / `update` take them. */
export function capabilitiesArg(c: CapabilitiesRow) {
  return {
    device: { type: c.device, value: undefined },
    device_name: textBytes(c.deviceName),
    device_count: c.deviceCount,
    memory_mib: c.memoryMib,
    tflops_milli: c.tflopsMilli,
    bandwidth_mbps: c.bandwidthMbps,
    region: textBytes(c.region),
  };
}

/** What registering and editing a provider ask of the chain; tests pass a fake. */
export interface RegistrationSource {
  provider(who: string, at: At): Promise<ProviderRow | undefined>;
  constants(): Promise<ProviderConstants>;
  free(address: string, at: At): Promise<bigint>;
  /** `Providers.register` of a checked registration, holding `stake`. */
  register(registration: Registration, stake: bigint, signer: PolkadotSigner): Observable<TxEvent>;
  /** `Providers.update` with only the parts given. */
  update(change: ProviderUpdate, signer: PolkadotSigner): Observable<TxEvent>;
}

export function chainRegistrationSource(api: GridApi): RegistrationSource {
  return {
    provider: (who, at) => loadProvider(api, who, at),
    constants: () => providerConstants(api),
    free: async (address, at) => (await api.query.System.Account.getValue(address, { at })).data.free,
    register: (r, stake, signer) =>
      api.tx.Providers.register({
        stake,
        capabilities: capabilitiesArg(r.capabilities),
        peer_public: r.peerPublic as SizedHex<32>,
        peer_signature: r.peerSignature as SizedHex<64>,
        multiaddrs: r.multiaddrs.map(textBytes),
        endpoint: textBytes(r.endpoint),
      }).signSubmitAndWatch(signer),
    update: (change, signer) =>
      api.tx.Providers.update({
        capabilities: change.capabilities && capabilitiesArg(change.capabilities),
        multiaddrs: change.multiaddrs?.map(textBytes),
        endpoint: change.endpoint === undefined ? undefined : textBytes(change.endpoint),
      }).signSubmitAndWatch(signer),
  };
}

/** Reads trainers' `/status` from their registered endpoints; tests pass a fake. */
export interface TrainerSource {
  /** Rejects with the reason when the trainer cannot be read. */
  status(endpoint: string): Promise<TrainerStatus>;
}

/** The browser's `fetch` of `<endpoint origin>/status`. */
export const httpTrainerSource: TrainerSource = { status: (endpoint) => fetchTrainerStatus(endpoint) };
