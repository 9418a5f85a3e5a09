// A transaction's progress as the UI shows it, folded from polkadot-api's
// `signSubmitAndWatch` events, with the runtime's dispatch error decoded into words.
import type { TxEvent } from "polkadot-api";

export interface BlockRef {
  number: number;
  hash: string;
}

export type TxState =
  | { phase: "idle" }
  | { phase: "signing" }
  | { phase: "pending"; txHash?: string }
  | { phase: "inBlock"; txHash: string; block: BlockRef }
  | { phase: "finalized"; txHash: string; block: BlockRef }
  | { phase: "failed"; txHash?: string; block?: BlockRef; error: string; finalized?: boolean };

export const IDLE: TxState = { phase: "idle" };

/** What pallet-jobs' errors mean (from their docs in pallets/jobs/src/lib.rs). */
const JOB_ERRORS: Record<string, string> = {
  BadModel: "a model dimension is zero, or the GPT's heads do not divide its width",
  ModelTooLarge: "the model is larger than the chain accepts",
  BadDataset: "the dataset URI is empty or not text, or its content hash is zero",
  BadInitialWeights: "the initial weights' URI is empty or not text, or their content hash is zero",
  BadBatchSize: "the batch size is zero",
  BadInnerLearningRate: "the inner learning rate is zero or above one",
  BadOuterLearningRate: "the outer learning rate is zero or above four",
  BadOuterMomentum: "the outer momentum is one or more",
  BadCompression: "a compression parameter is out of range",
  BadErrorDecay: "the error-feedback decay is above one",
  ZeroStepCap: "the cap on inner steps per round is zero",
  OverlapOverStepCap: "the overlapped steps are not below the cap on inner steps per round",
  DenseRoundsOverRounds: "more dense rounds than rounds",
  BadOuterAnneal: "the outer anneal spans no round or more than the job has, or ends at zero or above the outer learning rate",
  BadExchange: "the exchange's grace or fetch wait is zero, or its fan-in is under 3",
  ExchangeOverHalfTheRound: "the exchange (twice the grace and half the fetch wait) takes more than half the round",
  StepsOverCap: "the proof claims more inner steps than the job lets a round take",
  WorkWithoutUpdate: "the proof claims inner steps, samples or a start state but names no update",
  ZeroRounds: "zero rounds",
  TooManyRounds: "more rounds than the chain allows",
  ZeroReward: "the reward per round is zero",
  BadProviderRange: "min providers is zero or above max providers",
  TooManyProviders: "max providers is above the chain's limit",
  RoundTooShort: "the round is shorter than the chain allows",
  RoundTooLong: "the round is longer than the chain allows",
  ChallengeWindowTooLong: "the challenge window is longer than the chain allows",
  JobTooLong: "rounds × round blocks is longer than the chain lets a job run",
  TooFewToVerify:
    "the job has a challenge window but too few min providers to field a committee (MinVerifiableProviders)",
  StakeTooLowToDeter:
    "the job has a challenge window but its min provider stake is too low for the chain's audits to make cheating a losing bet (AuditRate, FraudSlash)",
  NotOnAllowlist: "the job's buyer admits only the accounts on its allowlist",
  HealthTooLow: "the provider's health score is below the job's minimum",
  RegisteredTooRecently: "the provider registered more recently than the job's minimum age allows",
  BudgetOverflow: "rounds × (reward + fee) overflows",
  InsufficientBalance:
    "the account cannot put that much on hold (the buyer its job's budget, a challenger the challenge's deposit and fee)",
  UnknownJob: "no such job",
  NotBuyer: "only the job's buyer may do that",
  JobEnded: "the job is completed or cancelled",
  CancelPending: "the buyer cancelled the job: it ends when its open round settles",
  TooManyJobs: "the provider takes part in (or recently left) as many jobs as it may",
  AgendaFull: "the blocks this would be due in are fully booked: try again a little later",
  NotEligible:
    "the caller is not a registered provider with the job's minimum stake (nor, to challenge, the job's buyer)",
  CannotChallengeSelf: "a provider cannot challenge its own contribution",
  RoundNotSettled: "the round has not been settled (or does not exist)",
  NoSuchContribution: "the provider was not paid for that round: there is nothing to challenge",
  ChallengeWindowClosed: "the job's challenge window for that round has passed (or the job has none)",
  ConvictedInJob: "the provider was convicted of fraud or equivocation in this job and may not join it again",
  AlreadyChallenged: "that contribution was already challenged",
  NoVerifiers: "too few other registered participants of the job hold the update to form a committee: nobody could decide the challenge",
  TooManyChallengesByChallenger: "the challenger has as many challenges open as it may",
  TooManyChallengesOnJob: "the job has as many challenges open as it may",
};

/** What pallet-providers' errors mean (from their docs in pallets/providers/src/lib.rs). */
const PROVIDER_ERRORS: Record<string, string> = {
  AlreadyRegistered: "the account is already a provider",
  NotRegistered: "the account is not a provider",
  StakeTooLow: "active stake would be below the minimum (and not zero)",
  InsufficientBalance: "the account cannot put that much on hold",
  BadPeerSignature: "the libp2p key's signature over (genesis hash, account) does not verify",
  PeerIdInUse: "that PeerId is bound to another account",
  TooManyProviders: "the registry is full: take the seat of an idle provider that holds less stake",
  RegistryNotFull: "the registry has room: register instead of taking a seat",
  SeatInUse: "that provider is in a job, or its stake is still locked for one",
  StakeBelowSeat: "taking that seat needs more stake than its provider holds",
  InvalidCapabilities: "device count is zero or the device name is empty",
  BadMultiaddr: "no listen multiaddr, or one that is not text starting with /",
  BadEndpoint: "the endpoint is not an http:// or https:// URL",
  EndpointNotPublic: "the endpoint's host is not a public IP address (loopback only on development chains; no DNS names)",
  EndpointChangedRecently: "the endpoint changed less than the cooldown ago: try again later",
  NothingToUpdate: "nothing to change",
  ZeroAmount: "zero amount",
  InsufficientBond: "unbonding more than the active stake",
  TooManyUnbondingChunks: "too many unbonding chunks in flight: withdraw first",
  NothingToWithdraw: "no unbonding chunk has unlocked yet",
  InJob: "the provider is in a job: leave it first (it must keep the minimum stake, and its capabilities are frozen)",
  StakeLocked:
    "that much active stake is locked for jobs (taken part in, or left less than a challenge window and voting period ago)",
  StillBonded: "active stake must be unbonded before deregistering",
  StillUnbonding: "unbonding stake must be withdrawn before deregistering",
};

const ERROR_DOCS: Record<string, Record<string, string>> = { Jobs: JOB_ERRORS, Providers: PROVIDER_ERRORS };

interface EnumLike {
  type: string;
  value?: unknown;
}
const isEnum = (v: unknown): v is EnumLike =>
  typeof v === "object" && v !== null && typeof (v as EnumLike).type === "string";

/** `{type: "Module", value: {type: "Jobs", value: {type: "NotBuyer"}}}` → "Jobs.NotBuyer: only …". */
export function formatDispatchError(error: unknown): string {
  if (!isEnum(error)) return String(error);
  const path: string[] = [];
  let v: unknown = error;
  while (isEnum(v)) {
    path.push(v.type);
    v = v.value;
  }
  if (path[0] === "Module") path.shift();
  const name = path.join(".");
  const doc = path[0] && path[1] ? ERROR_DOCS[path[0]]?.[path[1]] : undefined;
  return doc ? `${name}: ${doc}` : name;
}

/** The next state after one `signSubmitAndWatch` event. */
export function nextTxState(prev: TxState, ev: TxEvent): TxState {
  switch (ev.type) {
    case "signed":
    case "broadcasted":
      return { phase: "pending", txHash: ev.txHash };
    case "txBestBlocksState":
      if (ev.found) {
        const block = { number: ev.block.number, hash: ev.block.hash };
        return ev.ok
          ? { phase: "inBlock", txHash: ev.txHash, block }
          : { phase: "failed", txHash: ev.txHash, block, error: formatDispatchError(ev.dispatchError) };
      }
      if (!ev.isValid) return { phase: "failed", txHash: ev.txHash, error: "the transaction is no longer valid" };
      // Not (or no longer, after a re-org) in a best block: still pending.
      return prev.phase === "failed" ? prev : { phase: "pending", txHash: ev.txHash };
    case "finalized": {
      const block = { number: ev.block.number, hash: ev.block.hash };
      return ev.ok
        ? { phase: "finalized", txHash: ev.txHash, block }
        : { phase: "failed", txHash: ev.txHash, block, error: formatDispatchError(ev.dispatchError), finalized: true };
    }
  }
}

/** An error thrown by signing or submission (a refused signature, an invalid transaction). */
export function txErrorState(prev: TxState, error: unknown): TxState {
  const txHash = "txHash" in prev ? prev.txHash : undefined;
  let message = error instanceof Error ? error.message : String(error);
  const inner = (error as { error?: unknown })?.error;
  if (inner !== undefined) message = `${message}: ${formatDispatchError(inner) || JSON.stringify(inner)}`;
  return { phase: "failed", txHash, error: message };
}

/** The id in a `Jobs.JobCreated` event among a transaction's events. */
export function createdJobId(events: readonly unknown[]): bigint | undefined {
  for (const e of events) {
    if (!isEnum(e) || e.type !== "Jobs" || !isEnum(e.value)) continue;
    if (e.value.type === "JobCreated") return (e.value.value as { job: bigint }).job;
  }
  return undefined;
}
