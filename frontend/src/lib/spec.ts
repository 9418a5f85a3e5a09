// A buyer's job form → the chain's `JobSpec`, mirroring the buyer CLI's job file (the spec's
// serde form, primitives/src/spec_file.rs) and the chain's checks (primitives/src/job.rs
// `JobSpec::validate`; the trainer's dataset/model match, primitives/src/datasets.rs; the
// trainer's reading of a buyer's own dataset URI, trainer/src/data/source.rs).
import type { GridCalls } from "@polkadot-api/descriptors";
import { formatGrid, formatPerbill, parseGrid, perbillMulCeil, toNanos } from "./units";

/** The chain's job spec, as the generated descriptors type it. */
export type JobSpec = GridCalls["Jobs"]["create_job"]["spec"];
export type ModelSpec = JobSpec["model"];

/** The shipped datasets: `grid:` URI and BLAKE2b-256 content hash (primitives/src/datasets.rs;
 * `spec-rules.test.ts` checks them against the trainer's `spec-rules.json`). */
export const DATASETS = {
  shakespeare: {
    uri: "grid:shakespeare",
    hash: "0xea65bb632953dceb5587bc036052b72585b03638dedf0f31d18acaa8eacacbad",
    label: "Tiny Shakespeare (byte-level text)",
  },
  mnist: {
    uri: "grid:mnist",
    hash: "0xce7dc16f6a6e336d343c422bbe8ae8ae7f89620b578b6957b2fae20d8c1d1bb9",
    label: "MNIST digits",
  },
} as const;
export type DatasetName = keyof typeof DATASETS;
/** The form's dataset choice: a shipped one, or the buyer's own (a reference and a URI). */
export type DatasetChoice = DatasetName | "own";
export type ModelKind = "gpt" | "mlp" | "cnn" | "transformer" | "resnet";
/** A transformer's knobs as the form names them (the job file's words). */
export type ActivationKind = "gelu" | "swiglu";
export type NormKind = "layernorm" | "rmsnorm";
export type PositionKind = "learned" | "rope";

/** Whether a model reads token streams (`DataKind::Tokens`): the GPT and the transformer. */
export function readsTokens(model: ModelKind): boolean {
  return model === "gpt" || model === "transformer";
}

/** Whether a model can train on a dataset: the GPT or the transformer on text, the MLP, the
 * CNN or the ResNet on MNIST (primitives `ShippedDataset::fits`; `spec-rules.test.ts` checks
 * they agree). Text is bytes: a transformer's vocabulary must also be 256; MNIST's images are
 * 1×28×28 in 10 classes: a ResNet's shape must also be that (`buildJobSpec` checks both). */
export function modelFits(dataset: DatasetName, model: ModelKind): boolean {
  return dataset === "shakespeare" ? readsTokens(model) : !readsTokens(model);
}

/** The vocabulary of the shipped text (bytes): a token model must have exactly this one to
 * train on it (`DataKind::Tokens { vocab: 256 }`). */
export const BYTE_VOCAB = 256;

/** Square images of `channels` colour planes, `side` pixels a side, in `classes` classes
 * (primitives `DataKind::Images`). */
export interface ImageShape {
  channels: number;
  side: number;
  classes: number;
}

/** The images of the shipped image datasets (`DataKind::MNIST`): a ResNet must have exactly
 * this shape to train on one. */
export const SHIPPED_IMAGES: Partial<Record<DatasetName, ImageShape>> = {
  mnist: { channels: 1, side: 28, classes: 10 },
};
export type OptimizerKind = "adamw" | "sgd";
/** Side of the tiles `Tiles` compression cuts matrices into (`grid_primitives::job::TILE`). */
export const TILE = 64;

export type CompressionKind = "none" | "int8" | "topk" | "tiles";

/** The form's values, as typed (strings), in the job file's terms (amounts in GRID). */
export interface JobForm {
  dataset: DatasetChoice;
  /** The buyer's own dataset's reference (its manifest's hash), as `grid-trainer data publish` prints it. */
  datasetHash: string;
  /** Where providers fetch the buyer's own dataset, as `grid-trainer data publish` prints it. */
  datasetUri: string;
  /** The initial weights' reference (optional: both weights fields empty is none), as
   * `grid-trainer data publish FILE --format weights` prints it. */
  weightsHash: string;
  /** Where providers fetch the initial weights (optional), as `grid-trainer data publish` prints it. */
  weightsUri: string;
  model: ModelKind;
  gptContext: string;
  gptLayers: string;
  gptHeads: string;
  gptWidth: string;
  mlpHidden: string;
  mlpLayers: string;
  cnnChannels: string;
  cnnHidden: string;
  /** A ResNet's image colour planes (1 grey, 3 RGB). */
  resnetChannels: string;
  /** A ResNet's image side, in pixels (square images). */
  resnetSide: string;
  resnetClasses: string;
  /** Channels of the stem and the first stage (each later stage doubles them). */
  resnetWidth: string;
  resnetStages: string;
  /** Basic blocks per stage. */
  resnetBlocks: string;
  transformerVocab: string;
  transformerContext: string;
  transformerLayers: string;
  transformerWidth: string;
  transformerHeads: string;
  transformerKvHeads: string;
  transformerMlpWidth: string;
  transformerActivation: ActivationKind;
  transformerNorm: NormKind;
  transformerPosition: PositionKind;
  /** Whether the output head is the token embedding: the form's one check box. */
  transformerTied: boolean;
  rounds: string;
  roundBlocks: string;
  batchSize: string;
  optimizer: OptimizerKind;
  lr: string;
  warmupSteps: string;
  weightDecay: string;
  outerLr: string;
  outerMomentum: string;
  errorDecay: string;
  /** Rounds at the start that exchange dense (int8) updates and average the models. */
  denseRounds: string;
  /** The outer lr's anneal: the job's last rounds it spans (empty or 0: none). */
  annealRounds: string;
  /** The outer lr of the job's last round when annealed. */
  annealToLr: string;
  overlapSteps: string;
  /** Empty: no cap. */
  maxSteps: string;
  /** The exchange: commitments taken this long past the commit deadline (ms). */
  graceMs: string;
  /** The exchange: the longest wait for the set's updates after that (ms). */
  fetchMs: string;
  /** The exchange: at most this many updates aggregated a round. Empty: every member's. */
  fanIn: string;
  compression: CompressionKind;
  chunk: string;
  k: string;
  valueBits: string;
  rewardPerRound: string;
  minProviders: string;
  maxProviders: string;
  minProviderStake: string;
  challengeWindow: string;
  /** Admission (optional): the lowest health score a joiner may have, in percent. */
  minHealth: string;
  /** Admission: blocks a joiner must have been registered. */
  minAge: string;
  /** Admission: one SS58 address per line; empty: anyone. */
  allowlist: string;
}
export type FormField = keyof JobForm;
/** The fields typed or chosen as text: all but the check box. */
export type TextField = { [K in FormField]: JobForm[K] extends boolean ? never : K }[FormField];
export type FormErrors = Partial<Record<FormField, string>>;

/** The outer step a sparse code gets when its job file names none (grid-primitives
 * `Compression::default_outer_step`, what `bench/algorithms.sh` measured best for top-k;
 * `spec-rules.test.ts` checks it against the trainer's `spec-rules.json`). */
export const SPARSE_OUTER_STEP = { outerLr: "3", outerMomentum: "0" } as const;

/** The outer step the form suggests for `compression`: the sparse codes' own, else the
 * main job's (`DEFAULT_FORM`). */
export function outerStepFor(compression: CompressionKind): { outerLr: string; outerMomentum: string } {
  return compression === "topk" || compression === "tiles"
    ? { ...SPARSE_OUTER_STEP }
    : { outerLr: DEFAULT_FORM.outerLr, outerMomentum: DEFAULT_FORM.outerMomentum };
}

/** Defaults: examples/shakespeare-job.toml, the local network's main job. */
export const DEFAULT_FORM: JobForm = {
  dataset: "shakespeare",
  datasetHash: "",
  datasetUri: "",
  weightsHash: "",
  weightsUri: "",
  model: "gpt",
  gptContext: "64",
  gptLayers: "2",
  gptHeads: "4",
  gptWidth: "64",
  mlpHidden: "64",
  mlpLayers: "1",
  cnnChannels: "8",
  cnnHidden: "64",
  // examples/resnet-mnist-job.toml's model.
  resnetChannels: "1",
  resnetSide: "28",
  resnetClasses: "10",
  resnetWidth: "8",
  resnetStages: "2",
  resnetBlocks: "1",
  // examples/llama-job.toml's model.
  transformerVocab: "256",
  transformerContext: "64",
  transformerLayers: "2",
  transformerWidth: "64",
  transformerHeads: "4",
  transformerKvHeads: "2",
  transformerMlpWidth: "172",
  transformerActivation: "swiglu",
  transformerNorm: "rmsnorm",
  transformerPosition: "rope",
  transformerTied: true,
  rounds: "5",
  roundBlocks: "8",
  batchSize: "16",
  optimizer: "adamw",
  lr: "0.003",
  warmupSteps: "10",
  weightDecay: "0",
  outerLr: "0.7",
  outerMomentum: "0.5",
  errorDecay: "0.9",
  denseRounds: "0",
  annealRounds: "",
  annealToLr: "1",
  overlapSteps: "0",
  maxSteps: "",
  // ExchangeWindow's default in grid-primitives.
  graceMs: "1500",
  fetchMs: "4000",
  fanIn: "",
  compression: "int8",
  chunk: "256",
  k: "16",
  valueBits: "2",
  rewardPerRound: "30",
  minProviders: "4",
  maxProviders: "4",
  // A job open to challenges must make cheating a losing bet: 198 rounds' reward at 1% audits
  // and half the stake slashed (StakeTooLowToDeter), 5,940 GRID for 30 GRID a round.
  minProviderStake: "6000",
  challengeWindow: "16",
  minHealth: "0",
  minAge: "0",
  allowlist: "",
};

/** Longest dataset URI the chain stores, in UTF-8 bytes (`DatasetRef::uri`). */
export const MAX_DATASET_URI_BYTES = 256;

/** A dataset as a job names it: its reference (content hash, `0x` + 64 lowercase hex digits) and URI. */
export interface DatasetText {
  hash: string;
  uri: string;
}

/** The shipped dataset `dataset` names, if its reference and URI are both a shipped one's. */
export function shippedDataset(dataset: DatasetText): DatasetName | undefined {
  const names = Object.keys(DATASETS) as DatasetName[];
  return names.find((name) => DATASETS[name].uri === dataset.uri && DATASETS[name].hash === dataset.hash.toLowerCase());
}

/** A dataset reference as typed: 64 hex digits, with or without `0x`, as lowercase with `0x`; or why not. */
export function parseContentHash(text: string): { hash: string; error?: undefined } | { hash?: undefined; error: string } {
  const typed = text.trim();
  if (typed === "") return { error: "enter the reference grid-trainer data publish printed (0x and 64 hex digits)" };
  const digits = typed.replace(/^0x/i, "");
  if (!/^[0-9a-fA-F]{64}$/.test(digits)) {
    const count = /^[0-9a-fA-F]+$/.test(digits) ? ` (this has ${digits.length})` : "";
    return { error: `must be 0x followed by exactly 64 hex digits${count}` };
  }
  // The chain refuses a zero hash (SpecError::BadDataset).
  if (/^0+$/.test(digits)) return { error: "the zero hash names no dataset" };
  return { hash: `0x${digits.toLowerCase()}` };
}

/** Why a `grid:` URI names no shipped dataset, if it does not. */
function shippedUriProblem(name: string): string | undefined {
  return Object.keys(DATASETS).includes(name) ? undefined : `no shipped dataset is called "${name}" (shipped: ${Object.keys(DATASETS).join(", ")})`;
}

/** libp2p address protocols that take no value (`/quic-v1`, `/ws`, …). */
const VALUELESS = new Set(["quic", "quic-v1", "ws", "wss", "tls", "noise", "http", "https", "webrtc", "webrtc-direct", "webtransport", "p2p-circuit"]);

/** Base58 (Bitcoin's alphabet: no 0, O, I or l), as a peer id is written. */
const BASE58 = /^[1-9A-HJ-NP-Za-km-z]+$/;

/** Why one part of a libp2p address is wrong, for the parts whose values the form can check
 * as the trainer's multiaddr parser does (an IPv4 address, a port, a peer id); none otherwise. */
function addressPartProblem(protocol: string, value: string | undefined): string | undefined {
  if (value === undefined) return `${protocol} has no value`;
  if (protocol === "ip4") {
    const octets = value.split(".");
    const octet = (o: string) => /^\d{1,3}$/.test(o) && Number(o) <= 255;
    return octets.length === 4 && octets.every(octet) ? undefined : `${value} is not an IPv4 address`;
  }
  if (protocol === "tcp" || protocol === "udp") {
    return /^\d{1,5}$/.test(value) && Number(value) <= 65535 ? undefined : `${value} is not a port`;
  }
  if (protocol === "p2p") return BASE58.test(value) ? undefined : `${value} is not a peer id`;
  return undefined;
}

/** Why libp2p holder addresses (several separated by spaces or commas) are refused, if they are. */
function holdersProblem(uri: string): string | undefined {
  for (const address of uri.split(/[ ,]/).filter((a) => a !== "")) {
    if (!address.startsWith("/")) return `"${address}" is not a libp2p address (/ip4/…/tcp/…/p2p/<peer id>)`;
    if (!/\/p2p\/[^/]+/.test(address)) return `holder address ${address} has no /p2p/<peer id>`;
    const parts = address.split("/").slice(1);
    for (let i = 0; i < parts.length; i += VALUELESS.has(parts[i]) ? 1 : 2) {
      const problem = VALUELESS.has(parts[i]) ? undefined : addressPartProblem(parts[i], parts[i + 1]);
      if (problem) return `holder address ${address}: ${problem}`;
    }
  }
  return undefined;
}

/** Why the trainers would refuse a (trimmed) dataset URI, as trainer/src/data/source.rs reads one; none if they read it. */
export function datasetUriProblem(uri: string): string | undefined {
  if (uri === "") return "enter where providers fetch the dataset: the URI grid-trainer data publish printed";
  const bytes = new TextEncoder().encode(uri).length;
  if (bytes > MAX_DATASET_URI_BYTES) return `${bytes} bytes long: at most ${MAX_DATASET_URI_BYTES} (UTF-8)`;
  if (uri.startsWith("grid:")) return shippedUriProblem(uri.slice("grid:".length));
  if (uri.startsWith("file://")) return uri === "file://" ? "file:// needs a path: file:///path/to/data" : undefined;
  for (const scheme of ["http://", "https://"]) {
    if (uri.startsWith(scheme)) return uri === scheme ? `${scheme} needs a host and a file: ${scheme}host/file` : undefined;
  }
  if (uri.startsWith("/")) return holdersProblem(uri);
  return "must be libp2p holder addresses (/ip4/…/p2p/<peer id>), file://…, http(s)://… or grid:<shipped name>";
}

/** Why a `grid:` URI under another reference names nothing: the trainers take a shipped
 * dataset under its own reference only (source.rs: "the hash is not shipped …'s"). */
function shippedHashProblem(name: DatasetName): string {
  return `not the reference of shipped ${name}: that is ${DATASETS[name].hash}`;
}

/** Why `grid:` is refused as initial weights: the shipped datasets are training data. */
const SHIPPED_WEIGHTS_PROBLEM =
  "grid: names shipped training data, not weights: publish them with grid-trainer data publish FILE --format weights";

/** A libp2p holder of a dataset: its address, and the peer id in its last `/p2p/<peer id>`. */
export interface DatasetHolder {
  address: string;
  peer: string;
}

/** Where a dataset reference's URI says it comes from, as trainer/src/data/source.rs reads it
 * (`Source`); or why the trainers would refuse it (the form's messages). */
export type DatasetOrigin =
  | { kind: "shipped"; name: DatasetName }
  | { kind: "holders"; holders: DatasetHolder[] }
  | { kind: "file"; path: string }
  | { kind: "http"; url: string }
  | { kind: "refused"; problem: string };

/**
 * Where `dataset` comes from: a shipped dataset, libp2p holders, files on each provider's
 * machine or one file over HTTP; refused for a URI `datasetUriProblem` refuses, a shipped URI
 * under another reference (when the reference is known) or, as `weights`, a shipped one.
 */
export function datasetOrigin(dataset: { hash?: string; uri: string }, weights = false): DatasetOrigin {
  const uri = dataset.uri.trim();
  if (weights && uri.startsWith("grid:")) return { kind: "refused", problem: SHIPPED_WEIGHTS_PROBLEM };
  const problem = datasetUriProblem(uri);
  if (problem) return { kind: "refused", problem };
  if (uri.startsWith("grid:")) {
    const name = uri.slice("grid:".length) as DatasetName;
    if (dataset.hash !== undefined && dataset.hash.toLowerCase() !== DATASETS[name].hash) {
      return { kind: "refused", problem: shippedHashProblem(name) };
    }
    return { kind: "shipped", name };
  }
  if (uri.startsWith("file://")) return { kind: "file", path: uri.slice("file://".length) };
  if (uri.startsWith("http://") || uri.startsWith("https://")) return { kind: "http", url: uri };
  const holders = uri
    .split(/[ ,]/)
    .filter((a) => a !== "")
    .map((address) => ({ address, peer: [...address.matchAll(/\/p2p\/([^/]+)/g)].at(-1)![1]! }));
  return { kind: "holders", holders };
}

/** `text` as one shell word: in double quotes, with what the shell reads there escaped. */
function shellWord(text: string): string {
  return `"${text.replace(/[\\"$`]/g, "\\$&")}"`;
}

/** The command that shows what a reference is: its manifest's format, files and sizes, and
 * who serves it (`grid-trainer data info`, trainer/src/bin/grid-trainer.rs). */
export function dataInfoCommand(dataset: DatasetText): string {
  return `grid-trainer data info --reference ${dataset.hash} --uri ${shellWord(dataset.uri.trim())}`;
}

type DatasetErrors = Partial<Record<"datasetHash" | "datasetUri", string>>;

/** The buyer's own dataset as typed, checked as the trainers check it; errors against its two fields. */
export function checkOwnDataset(
  form: Pick<JobForm, "datasetHash" | "datasetUri">,
): { dataset: DatasetText; errors?: undefined } | { dataset?: undefined; errors: DatasetErrors } {
  const errors: DatasetErrors = {};
  const parsed = parseContentHash(form.datasetHash);
  if (parsed.error) errors.datasetHash = parsed.error;
  const uri = form.datasetUri.trim();
  const uriProblem = datasetUriProblem(uri);
  if (uriProblem) errors.datasetUri = uriProblem;
  // A `grid:` URI is a shipped dataset, under its own reference only.
  const name = uri.slice("grid:".length) as DatasetName;
  if (!uriProblem && parsed.hash && uri.startsWith("grid:") && parsed.hash !== DATASETS[name].hash) {
    errors.datasetHash = shippedHashProblem(name);
  }
  if (parsed.hash === undefined || Object.keys(errors).length > 0) return { errors };
  return { dataset: { hash: parsed.hash, uri } };
}

/** The form's dataset: a shipped one, or the buyer's own as checked. */
export function formDataset(
  form: Pick<JobForm, "dataset" | "datasetHash" | "datasetUri">,
): { dataset: DatasetText; errors?: undefined } | { dataset?: undefined; errors: DatasetErrors } {
  if (form.dataset !== "own") return { dataset: { hash: DATASETS[form.dataset].hash, uri: DATASETS[form.dataset].uri } };
  return checkOwnDataset(form);
}

type WeightsErrors = Partial<Record<"weightsHash" | "weightsUri", string>>;

/**
 * The job's initial weights as typed (fine-tuning: a `weights` dataset, one safetensors file
 * the buyer publishes with `grid-trainer data publish FILE --format weights`), checked as the
 * buyer's own dataset is (`parseContentHash`, `datasetUriProblem`); both fields empty: none,
 * the seeded initialisation. Errors against its two fields.
 */
export function checkInitialWeights(
  form: Pick<JobForm, "weightsHash" | "weightsUri">,
): { weights: DatasetText | undefined; errors?: undefined } | { weights?: undefined; errors: WeightsErrors } {
  const typedHash = form.weightsHash.trim();
  const uri = form.weightsUri.trim();
  if (typedHash === "" && uri === "") return { weights: undefined };
  const errors: WeightsErrors = {};
  const parsed = parseContentHash(typedHash);
  if (parsed.error) errors.weightsHash = parsed.error;
  if (uri === "") errors.weightsUri = "enter where providers fetch the weights: the URI grid-trainer data publish printed";
  else if (uri.startsWith("grid:")) {
    // The shipped datasets are training data, never weights (the trainers refuse them as such).
    errors.weightsUri = SHIPPED_WEIGHTS_PROBLEM;
  } else {
    const uriProblem = datasetUriProblem(uri);
    if (uriProblem) errors.weightsUri = uriProblem;
  }
  if (parsed.hash === undefined || Object.keys(errors).length > 0) return { errors };
  return { weights: { hash: parsed.hash, uri } };
}

/** A job's initial weights in words: their reference and URI as text; none: the seeded initialisation. */
export function describeInitialWeights(weights: JobSpec["initial_weights"]): DatasetText | undefined {
  return weights && { hash: weights.content_hash, uri: new TextDecoder().decode(weights.uri) };
}

/** A job's dataset in words: the shipped one's name if it is one, otherwise "own dataset"; its URI as text. */
export function describeDataset(dataset: JobSpec["dataset"]): DatasetText & { shipped?: DatasetName; label: string } {
  const text = { hash: dataset.content_hash, uri: new TextDecoder().decode(dataset.uri) };
  const shipped = shippedDataset(text);
  return { ...text, shipped, label: shipped ? DATASETS[shipped].label : "own dataset" };
}

/** The chain's limits (pallet-jobs constants), checked before signing. */
export interface SpecLimits {
  maxRounds: number;
  maxParticipants: number;
  minRoundBlocks: number;
  maxRoundBlocks: number;
  maxChallengeWindow: number;
  /** Longest job, rounds × round blocks (`MaxJobBlocks`). */
  maxJobBlocks: number;
  /** Fewest min providers of a job with a challenge window (`MinVerifiableProviders`): a
   * challenged update's sender and challenger leave a committee of the rest. */
  minVerifiableProviders: number;
  /** Share of paid contributions the chain audits (`AuditRate`, Perbill parts); zero: no audits. */
  auditRate: number;
  /** Share of the stake proven fraud loses (`FraudSlash`, Perbill parts). */
  fraudSlash: number;
}

const BILLION = 1_000_000_000n;
/** What `stakeFor` asks when no stake deters (the chain's u128::MAX). */
export const U128_MAX = (1n << 128n) - 1n;

/**
 * The least stake that makes cheating a losing bet against the chain's audits, in planks
 * (grid-primitives `Deterrence::stake_for`): a cheat gains the reward R in each round not
 * audited and loses `fraudSlash` of its stake once caught, so the slash must be at least
 * R (1 - q) / q, rounded up. Null without audits; u128::MAX (impossible) when fraud costs
 * nothing or the reward is too large for any stake.
 */
export function stakeFor(auditRate: number, fraudSlash: number, reward: bigint): bigint | null {
  const q = BigInt(auditRate);
  if (q === 0n) return null;
  const slash = BigInt(fraudSlash);
  if (slash === 0n) return U128_MAX;
  // stake × slash / 1e9 >= reward × (1e9 - q) / q; the chain's u128 saturates.
  const numerator = reward * (BILLION - q) * BILLION;
  if (numerator >= U128_MAX) return U128_MAX;
  const den = q * slash;
  return (numerator + den - 1n) / den;
}

/** The stake the form's reward and challenge window need (null: no rule applies, or they do not parse yet). */
export function neededStake(form: Pick<JobForm, "rewardPerRound" | "challengeWindow">, limits?: SpecLimits): bigint | null {
  const reward = parseGrid(form.rewardPerRound);
  const blocks = form.challengeWindow.trim();
  if (!limits || typeof reward === "string" || !/^\d+$/.test(blocks) || Number(blocks) === 0) return null;
  return stakeFor(limits.auditRate, limits.fraudSlash, reward);
}

/** Why a stake below `needed` is refused (pallet error StakeTooLowToDeter), naming the stake. */
function deterrenceText(needed: bigint, limits: SpecLimits): string {
  const odds = `${formatPerbill(limits.auditRate)} of contributions are audited and fraud loses ${formatPerbill(limits.fraudSlash)} of the stake`;
  if (needed === U128_MAX) return `no stake makes cheating a losing bet here (${odds}): lower the reward or set the challenge window to 0`;
  return `at least ${formatGrid(needed)} with a challenge window, or cheating pays: ${odds} (or set the window to 0)`;
}

/** Most peers a proof can list, hence most participants of any job (`MaxProofPeers`). */
export const MAX_PROOF_PEERS = 64;

/** grid-primitives `time::MILLI_SECS_PER_BLOCK`. */
export const MILLI_SECS_PER_BLOCK = 6000;

/** The time a job's exchange keeps between the commit deadline and the proofs (ms):
 * grid-primitives `ExchangeWindow::allowance_ms` (`spec-rules.test.ts` checks it). */
export function exchangeAllowanceMs(exchange: { grace_ms: number; fetch_ms: number }): number {
  return 2 * exchange.grace_ms + Math.floor(exchange.fetch_ms / 2);
}
/** The largest value of each model dimension (grid-primitives `job::model_bounds`, a ResNet's
 * `resnet::bounds`; `spec-rules.test.ts` checks them against the trainer's `spec-rules.json`). */
export const MODEL_BOUNDS = {
  gptVocab: 1 << 20,
  gptContext: 1 << 20,
  gptWidth: 1 << 16,
  layers: 1 << 10,
  hidden: 1 << 20,
  cnnChannels: 1 << 12,
  resnetChannels: 4,
  resnetSide: 1 << 10,
  resnetClasses: 1 << 14,
  resnetWidth: 1 << 10,
  resnetStages: 6,
  resnetBlocks: 32,
} as const;

/** Largest model, in parameters (`MAX_MODEL_PARAMS`). */
export const MAX_MODEL_PARAMS = 10_000_000_000n;

export type TransformerConfig = Extract<ModelSpec, { type: "Transformer" }>["value"];
export type ResNetConfig = Extract<ModelSpec, { type: "ResNet" }>["value"];

/** A ResNet's trainable parameters, as `ResNetConfig::parameters` counts them: each
 * convolution's weights and biases (k × k × inputs × outputs + outputs: a 3×3 stem, two 3×3
 * per block, a 1×1 shortcut for each stage's first block after the first stage), one residual
 * gain per block, and the linear classifier's weights and biases. */
export function resnetParameters(c: ResNetConfig): bigint {
  const conv = (k: bigint, inputs: bigint, outputs: bigint) => k * k * inputs * outputs + outputs;
  const width = BigInt(c.width);
  let total = conv(3n, BigInt(c.channels), width);
  let channels = width;
  for (let s = 0; s < c.stages; s++) {
    const inputs = channels;
    channels = width << BigInt(s);
    for (let b = 0; b < c.blocks; b++) {
      const downsamples = s > 0 && b === 0;
      total += conv(3n, downsamples ? inputs : channels, channels) + conv(3n, channels, channels);
      if (downsamples) total += conv(1n, inputs, channels);
    }
  }
  const classes = BigInt(c.classes);
  return total + BigInt(c.stages) * BigInt(c.blocks) + channels * classes + classes;
}

/** A transformer's trainable parameters, as `TransformerConfig::parameters` counts them: no
 * biases, pre-norm blocks, a final norm, the head unless tied to the token embedding. */
export function transformerParameters(c: TransformerConfig): bigint {
  const [v, t, l, w] = [c.vocab, c.context, c.layers, c.width].map(BigInt);
  const headWidth = w / BigInt(Math.max(c.heads, 1));
  const kv = BigInt(c.kv_heads) * headWidth;
  const m = BigInt(c.mlp_width);
  const norm = c.norm.type === "LayerNorm" ? 2n * w : w;
  const mlp = c.activation.type === "Gelu" ? 2n * w * m : 3n * w * m;
  // Per block: q and o (w × w each), k and v (w × kv each), the MLP, two norms.
  const block = 2n * w * w + 2n * w * kv + mlp + 2n * norm;
  const positions = c.position.type === "Learned" ? t * w : 0n;
  const head = c.tied_embeddings ? 0n : w * v;
  return v * w + positions + l * block + norm + head;
}

/** Trainable parameters, as `ModelSpec::parameters` counts them. */
export function parameters(model: ModelSpec): bigint {
  switch (model.type) {
    case "Gpt": {
      const { vocab, context, layers, width } = model.value;
      const [v, t, l, w] = [vocab, context, layers, width].map(BigInt);
      const block = 12n * w * w + 13n * w;
      return v * w + t * w + l * block + 2n * w + w * v;
    }
    case "MnistMlp": {
      const [h, l] = [model.value.hidden, model.value.layers].map(BigInt);
      return 784n * h + h + (l - 1n) * (h * h + h) + (h * 10n + 10n);
    }
    case "MnistCnn": {
      const [c1, h] = [model.value.channels, model.value.hidden].map(BigInt);
      const c2 = 2n * c1;
      const conv = 9n * c1 + c1 + (9n * c1 * c2 + c2);
      return conv + (49n * c2 * h + h) + (h * 10n + 10n);
    }
    case "Transformer":
      return transformerParameters(model.value);
    case "ResNet":
      return resnetParameters(model.value);
  }
}

/** What the buyer puts in escrow: `rounds × (reward + ⌈fee × reward⌉)` (pallet-jobs escrow.rs). */
export interface Escrow {
  rewardPerRound: bigint;
  feePerRound: bigint;
  perRound: bigint;
  rounds: number;
  total: bigint;
}

export function escrowOf(spec: Pick<JobSpec, "reward_per_round" | "rounds">, feePerbill: number): Escrow {
  const feePerRound = perbillMulCeil(feePerbill, spec.reward_per_round);
  const perRound = spec.reward_per_round + feePerRound;
  return {
    rewardPerRound: spec.reward_per_round,
    feePerRound,
    perRound,
    rounds: spec.rounds,
    total: perRound * BigInt(spec.rounds),
  };
}

const U16_MAX = 0xffff;
const U32_MAX = 0xffff_ffff;
/** grid-primitives `MIN_FAN_IN`: the fewest updates a trimmed mean can drop an outlier from. */
export const MIN_FAN_IN = 3;

/** Reads a whole-number field within `[min, max]`, noting the field's error (`buildJobSpec`'s `int`). */
type IntField = (field: FormField, max?: number, min?: number) => number;
/** Notes `message` against `field` when `bad`, unless the field has an error already. */
type Rule = (bad: boolean, field: FormField, message: string) => void;

const ACTIVATIONS = { gelu: "Gelu", swiglu: "SwiGlu" } as const;
const NORMS = { layernorm: "LayerNorm", rmsnorm: "RmsNorm" } as const;
const POSITIONS = { learned: "Learned", rope: "Rope" } as const;

/** The form's transformer, each dimension bounded as `ModelSpec::validate` bounds it and its
 * shape checked as `TransformerConfig::well_formed` does, each problem on its field. */
function transformerModel(form: JobForm, int: IntField, rule: Rule): ModelSpec {
  const width = int("transformerWidth", MODEL_BOUNDS.gptWidth, 1);
  const heads = int("transformerHeads", U16_MAX, 1);
  const kvHeads = int("transformerKvHeads", U16_MAX, 1);
  const position = POSITIONS[form.transformerPosition];
  rule(heads > 0 && width % heads !== 0, "transformerHeads", "must divide the width");
  const headWidth = heads > 0 ? width / heads : 0;
  rule(position === "Rope" && headWidth % 2 !== 0, "transformerHeads", `with RoPE the head width (width ÷ heads = ${headWidth}) must be even`);
  rule(kvHeads > 0 && heads % kvHeads !== 0, "transformerKvHeads", "must divide the heads");
  return {
    type: "Transformer",
    value: {
      vocab: int("transformerVocab", MODEL_BOUNDS.gptVocab, 1),
      context: int("transformerContext", MODEL_BOUNDS.gptContext, 1),
      layers: int("transformerLayers", MODEL_BOUNDS.layers, 1),
      width,
      heads,
      kv_heads: kvHeads,
      mlp_width: int("transformerMlpWidth", MODEL_BOUNDS.hidden, 1),
      activation: { type: ACTIVATIONS[form.transformerActivation], value: undefined },
      norm: { type: NORMS[form.transformerNorm], value: undefined },
      position: { type: position, value: undefined },
      tied_embeddings: form.transformerTied,
    },
  };
}

/** The form's ResNet, each dimension bounded as `ResNetConfig::well_formed` bounds it (at
 * least 2 classes, every other dimension at least 1), each problem on its field. */
function resnetModel(int: IntField): ModelSpec {
  return {
    type: "ResNet",
    value: {
      channels: int("resnetChannels", MODEL_BOUNDS.resnetChannels, 1),
      side: int("resnetSide", MODEL_BOUNDS.resnetSide, 1),
      classes: int("resnetClasses", MODEL_BOUNDS.resnetClasses, 2),
      width: int("resnetWidth", MODEL_BOUNDS.resnetWidth, 1),
      stages: int("resnetStages", MODEL_BOUNDS.resnetStages, 1),
      blocks: int("resnetBlocks", MODEL_BOUNDS.resnetBlocks, 1),
    },
  };
}

/** Why a shipped dataset cannot train the model, each against the field to change; none if it can. */
function shippedFitProblems(shipped: DatasetName, form: JobForm, model: ModelSpec): [FormField, string][] {
  if (!modelFits(shipped, form.model)) {
    return [["model", shipped === "shakespeare" ? "text needs the GPT or the transformer" : "MNIST needs the MLP, the CNN or the ResNet"]];
  }
  if (model.type === "Transformer" && model.value.vocab !== BYTE_VOCAB) {
    return [["transformerVocab", `the shipped text is bytes: the vocabulary must be ${BYTE_VOCAB}`]];
  }
  const images = SHIPPED_IMAGES[shipped];
  if (model.type === "ResNet" && images) {
    const { channels, side, classes } = model.value;
    const problems: [FormField, string][] = [];
    const label = DATASETS[shipped].label;
    const shape = `${label} are ${images.channels}×${images.side}×${images.side} in ${images.classes} classes`;
    if (channels !== images.channels) problems.push(["resnetChannels", `${shape}: the channels must be ${images.channels}`]);
    if (side !== images.side) problems.push(["resnetSide", `${shape}: the side must be ${images.side}`]);
    if (classes !== images.classes) problems.push(["resnetClasses", `${shape}: the classes must be ${images.classes}`]);
    return problems;
  }
  return [];
}

/** Converts and checks a form; every problem is reported against its field. */
export function buildJobSpec(
  form: JobForm,
  limits?: SpecLimits,
): { spec: JobSpec; errors?: undefined } | { spec?: undefined; errors: FormErrors } {
  const errors: FormErrors = {};
  const int = (field: FormField, max = U32_MAX, min = 0): number => {
    const text = String(form[field]).trim();
    if (!/^\d+$/.test(text)) {
      errors[field] = "must be a whole number";
      return 0;
    }
    const n = Number(text);
    if (n < min || n > max) errors[field] = `must be between ${min} and ${max}`;
    return n;
  };
  const frac = (field: FormField): number => {
    const text = String(form[field]).trim();
    const x = text === "" ? NaN : Number(text);
    const n = toNanos(x);
    if (typeof n === "string") {
      errors[field] = Number.isNaN(x) ? "must be a number" : `must be between 0 and 4.29`;
      return 0;
    }
    return n;
  };
  const grid = (field: FormField): bigint => {
    const units = parseGrid(String(form[field]));
    if (typeof units === "string") {
      errors[field] = units;
      return 0n;
    }
    return units;
  };
  const rule = (bad: boolean, field: FormField, message: string) => {
    if (bad && !errors[field]) errors[field] = message;
  };

  // Model.
  let model: ModelSpec;
  if (form.model === "gpt") {
    const width = int("gptWidth", MODEL_BOUNDS.gptWidth, 1);
    const heads = int("gptHeads", U16_MAX, 1);
    const context = int("gptContext", MODEL_BOUNDS.gptContext, 1);
    model = {
      type: "Gpt",
      value: { vocab: 256, context, layers: int("gptLayers", MODEL_BOUNDS.layers, 1), heads, width },
    };
    rule(heads > 0 && width % heads !== 0, "gptHeads", "must divide the width");
  } else if (form.model === "transformer") {
    model = transformerModel(form, int, rule);
  } else if (form.model === "resnet") {
    model = resnetModel(int);
  } else if (form.model === "mlp") {
    const hidden = int("mlpHidden", MODEL_BOUNDS.hidden, 1);
    model = { type: "MnistMlp", value: { hidden, layers: int("mlpLayers", MODEL_BOUNDS.layers, 1) } };
  } else {
    const channels = int("cnnChannels", MODEL_BOUNDS.cnnChannels, 1);
    model = { type: "MnistCnn", value: { channels, hidden: int("cnnHidden", MODEL_BOUNDS.hidden, 1) } };
  }
  // Which models read the buyer's own dataset the form cannot know; a shipped one it does.
  const data = formDataset(form);
  const shipped = data.dataset && shippedDataset(data.dataset);
  for (const misfit of shipped ? shippedFitProblems(shipped, form, model) : []) rule(true, ...misfit);
  const anyModelError = Object.keys(errors).length > 0;
  if (!anyModelError && parameters(model) > MAX_MODEL_PARAMS) {
    errors.model = `${parameters(model)} parameters is above the limit of 10 billion`;
  }
  Object.assign(errors, data.errors);
  const weights = checkInitialWeights(form);
  Object.assign(errors, weights.errors);

  // Training.
  const lr = frac("lr");
  const inner: JobSpec["training"]["inner"] =
    form.optimizer === "adamw"
      ? { type: "AdamW", value: { lr, weight_decay: frac("weightDecay"), warmup_steps: int("warmupSteps") } }
      : { type: "Sgd", value: { lr } };
  rule(lr === 0 || lr > 1e9, "lr", "must be above 0 and at most 1");
  const outerLr = frac("outerLr");
  rule(outerLr === 0 || outerLr > 4e9, "outerLr", "must be above 0 and at most 4");
  const outerMomentum = frac("outerMomentum");
  rule(outerMomentum >= 1e9, "outerMomentum", "must be below 1");
  const errorDecay = frac("errorDecay");
  rule(errorDecay > 1e9, "errorDecay", "must be at most 1");
  const overlapSteps = int("overlapSteps");
  // Pallet errors ZeroStepCap and OverlapOverStepCap.
  const maxSteps = String(form.maxSteps).trim() === "" ? undefined : int("maxSteps", U32_MAX, 1);
  rule(
    maxSteps !== undefined && overlapSteps > 0 && overlapSteps >= maxSteps,
    "overlapSteps",
    "must be below the most inner steps per round",
  );
  let compression: JobSpec["training"]["compression"];
  if (form.compression === "none") compression = { type: "None", value: undefined };
  else if (form.compression === "int8") compression = { type: "Int8", value: { chunk: int("chunk", U32_MAX, 1) } };
  else if (form.compression === "tiles") compression = { type: "Tiles", value: { k: int("k", TILE * TILE, 1) } };
  else {
    const chunk = int("chunk", U32_MAX, 1);
    const k = int("k", U32_MAX, 1);
    const valueBits = int("valueBits", 8, 1);
    rule(k > chunk, "k", "must be at most the chunk");
    compression = { type: "TopK", value: { chunk, k, value_bits: valueBits } };
  }
  const batchSize = int("batchSize", U32_MAX, 1);
  const roundBlocks = int("roundBlocks");
  // Pallet error BadExchange (a zero part, or a fan-in under MIN_FAN_IN).
  const fanIn = String(form.fanIn).trim() === "" ? undefined : int("fanIn", U16_MAX, MIN_FAN_IN);
  const exchange = {
    grace_ms: int("graceMs", U32_MAX, 1),
    fetch_ms: int("fetchMs", U32_MAX, 1),
    fan_in: fanIn,
  };
  const rounds = int("rounds", U32_MAX, 1);
  // Pallet error DenseRoundsOverRounds.
  const denseRounds = int("denseRounds");
  rule(denseRounds > rounds, "denseRounds", "must be at most the rounds");
  // Pallet error BadOuterAnneal.
  const annealRounds = String(form.annealRounds).trim() === "" ? 0 : int("annealRounds");
  rule(annealRounds > rounds, "annealRounds", "must be at most the rounds");
  let outerAnneal: JobSpec["training"]["outer_anneal"];
  if (annealRounds > 0) {
    const toLr = frac("annealToLr");
    rule(toLr === 0 || toLr > outerLr, "annealToLr", "must be above 0 and at most the outer learning rate");
    outerAnneal = { rounds: annealRounds, to_lr: toLr };
  }
  const rewardPerRound = grid("rewardPerRound");
  rule(rewardPerRound === 0n, "rewardPerRound", "must be above 0");
  const minProviders = int("minProviders", U32_MAX, 1);
  const maxProviders = int("maxProviders");
  rule(minProviders > maxProviders, "minProviders", "must be at most the maximum");
  const maxParticipants = Math.min(limits?.maxParticipants ?? MAX_PROOF_PEERS, MAX_PROOF_PEERS);
  rule(maxProviders > maxParticipants, "maxProviders", `the chain allows at most ${maxParticipants}`);
  const minProviderStake = grid("minProviderStake");
  const challengeWindow = int("challengeWindow");
  if (limits) {
    rule(rounds > limits.maxRounds, "rounds", `the chain allows at most ${limits.maxRounds}`);
    rule(roundBlocks < limits.minRoundBlocks, "roundBlocks", `at least ${limits.minRoundBlocks} blocks`);
    rule(roundBlocks > limits.maxRoundBlocks, "roundBlocks", `at most ${limits.maxRoundBlocks} blocks`);
    rule(
      challengeWindow > limits.maxChallengeWindow,
      "challengeWindow",
      `at most ${limits.maxChallengeWindow} blocks`,
    );
    rule(
      rounds * roundBlocks > limits.maxJobBlocks,
      "rounds",
      `rounds × round blocks may be at most ${limits.maxJobBlocks}`,
    );
    // Pallet error TooFewToVerify.
    rule(
      challengeWindow > 0 && minProviders < limits.minVerifiableProviders,
      "minProviders",
      `at least ${limits.minVerifiableProviders} with a challenge window (or set the window to 0)`,
    );
    // Pallet error StakeTooLowToDeter: the chain's audits must make cheating a losing bet.
    const needed = challengeWindow > 0 ? stakeFor(limits.auditRate, limits.fraudSlash, rewardPerRound) : null;
    rule(needed !== null && minProviderStake < needed, "minProviderStake", deterrenceText(needed ?? 0n, limits));
  }
  // Pallet error ExchangeOverHalfTheRound, for a round length that is otherwise right.
  const allowanceMs = exchangeAllowanceMs(exchange);
  rule(
    !errors.roundBlocks && 2 * allowanceMs > roundBlocks * MILLI_SECS_PER_BLOCK,
    "graceMs",
    `the exchange (2 × grace + fetch / 2 = ${allowanceMs} ms) may take at most half the round (${(roundBlocks * MILLI_SECS_PER_BLOCK) / 2} ms)`,
  );
  if (Object.keys(errors).length > 0 || !data.dataset) return { errors };

  const dataset = data.dataset;
  // Copied into this realm's Uint8Array: polkadot-api checks bytes with `instanceof`, which
  // a TextEncoder from another realm (jsdom in tests) would fail.
  const bytes = (text: string) => Uint8Array.from(new TextEncoder().encode(text));
  const initialWeights = weights.weights && { content_hash: weights.weights.hash, uri: bytes(weights.weights.uri) };
  return {
    spec: {
      model,
      dataset: { content_hash: dataset.hash, uri: bytes(dataset.uri) },
      training: {
        round_blocks: roundBlocks,
        batch_size: batchSize,
        inner,
        outer_lr: outerLr,
        outer_momentum: outerMomentum,
        error_decay: errorDecay,
        dense_rounds: denseRounds,
        outer_anneal: outerAnneal,
        overlap_steps: overlapSteps,
        max_steps: maxSteps,
        exchange,
        compression,
      },
      rounds,
      reward_per_round: rewardPerRound,
      min_providers: minProviders,
      max_providers: maxProviders,
      min_provider_stake: minProviderStake,
      challenge_window: challengeWindow,
      initial_weights: initialWeights,
    },
  };
}

/** A one-line description of a model: "GPT 2×64, 4 heads, ctx 64 (0.14M params)". */
export function describeModel(model: ModelSpec): string {
  const params = Number(parameters(model));
  const p = params >= 1e6 ? `${(params / 1e6).toFixed(2)}M` : `${(params / 1e3).toFixed(1)}k`;
  switch (model.type) {
    case "Gpt":
      return `GPT ${model.value.layers}×${model.value.width}, ${model.value.heads} heads, context ${model.value.context} (${p} params)`;
    case "MnistMlp":
      return `MLP ${model.value.layers}×${model.value.hidden} (${p} params)`;
    case "MnistCnn":
      return `CNN ${model.value.channels} channels, dense ${model.value.hidden} (${p} params)`;
    case "Transformer":
      return `${describeTransformer(model.value)} (${p} params)`;
    case "ResNet":
      return `${describeResNet(model.value)} (${p} params)`;
  }
}

/** `count` and `noun`, plural unless one: "1 block", "2 stages". */
function counted(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

/** A ResNet's dimensions in words: "ResNet 1×28×28 → 10 classes, width 8, 2 stages × 1 block". */
export function describeResNet(c: ResNetConfig): string {
  return `ResNet ${c.channels}×${c.side}×${c.side} → ${c.classes} classes, width ${c.width}, ${counted(c.stages, "stage")} × ${counted(c.blocks, "block")}`;
}

const ACTIVATION_NAMES = { Gelu: "GELU", SwiGlu: "SwiGLU" } as const;
const NORM_NAMES = { LayerNorm: "LayerNorm", RmsNorm: "RMSNorm" } as const;
const POSITION_NAMES = { Learned: "learned positions", Rope: "RoPE" } as const;

/** A transformer's knobs in words: "Transformer 2×64, 4 heads (2 kv), MLP 172 SwiGLU, RMSNorm,
 * RoPE, tied embeddings, vocab 256, context 64". */
export function describeTransformer(c: TransformerConfig): string {
  const knobs = [
    `Transformer ${c.layers}×${c.width}`,
    `${c.heads} heads (${c.kv_heads} kv)`,
    `MLP ${c.mlp_width} ${ACTIVATION_NAMES[c.activation.type]}`,
    NORM_NAMES[c.norm.type],
    POSITION_NAMES[c.position.type],
    c.tied_embeddings ? "tied embeddings" : "untied embeddings",
    `vocab ${c.vocab}`,
    `context ${c.context}`,
  ];
  return knobs.join(", ");
}

/** A compression scheme in words. */
export function describeCompression(c: JobSpec["training"]["compression"]): string {
  switch (c.type) {
    case "None":
      return "none (f32)";
    case "Int8":
      return `int8, chunks of ${c.value.chunk}`;
    case "TopK":
      return `top-${c.value.k} of ${c.value.chunk}, ${c.value.value_bits} bits`;
    case "Tiles":
      return `top-${c.value.k} of each ${TILE}×${TILE} tile, 2 bits`;
  }
}

/** The escrow in words, for the summary before signing. */
export function describeEscrow(e: Escrow): string {
  return `${e.rounds} × (${formatGrid(e.rewardPerRound)} + ${formatGrid(e.feePerRound)} fee) = ${formatGrid(e.total)}`;
}
