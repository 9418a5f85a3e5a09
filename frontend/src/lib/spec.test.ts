import { describe, expect, it } from "vitest";
import {
  buildJobSpec,
  checkInitialWeights,
  checkOwnDataset,
  dataInfoCommand,
  DATASETS,
  datasetOrigin,
  datasetUriProblem,
  DEFAULT_FORM,
  describeCompression,
  describeDataset,
  describeInitialWeights,
  describeModel,
  describeResNet,
  escrowOf,
  MODEL_BOUNDS,
  modelFits,
  neededStake,
  parameters,
  parseContentHash,
  resnetParameters,
  shippedDataset,
  stakeFor,
  transformerParameters,
  U128_MAX,
  type JobForm,
  type ResNetConfig,
  type SpecLimits,
  type TransformerConfig,
} from "./spec";
import { UNIT } from "./units";

// The runtime's limits (runtime/src/configs.rs).
const LIMITS: SpecLimits = {
  maxRounds: 100_000,
  maxParticipants: 64,
  minRoundBlocks: 2,
  maxRoundBlocks: 14_400,
  maxChallengeWindow: 7_200,
  maxJobBlocks: 1_296_000,
  minVerifiableProviders: 4,
  // 1% of paid contributions audited, half the stake slashed for fraud.
  auditRate: 10_000_000,
  fraudSlash: 500_000_000,
};

const form = (patch: Partial<JobForm>): JobForm => ({ ...DEFAULT_FORM, ...patch });
const errorsOf = (patch: Partial<JobForm>, limits: SpecLimits | undefined = LIMITS) =>
  buildJobSpec(form(patch), limits).errors ?? {};

describe("job form → JobSpec", () => {
  it("converts examples/shakespeare-job.toml as the buyer CLI reads it", () => {
    const { spec, errors } = buildJobSpec(DEFAULT_FORM, LIMITS);
    expect(errors).toBeUndefined();
    expect(spec).toEqual({
      model: { type: "Gpt", value: { vocab: 256, context: 64, layers: 2, heads: 4, width: 64 } },
      dataset: { content_hash: DATASETS.shakespeare.hash, uri: Uint8Array.from(new TextEncoder().encode("grid:shakespeare")) },
      training: {
        round_blocks: 8,
        batch_size: 16,
        inner: { type: "AdamW", value: { lr: 3_000_000, weight_decay: 0, warmup_steps: 10 } },
        outer_lr: 700_000_000,
        outer_momentum: 500_000_000,
        error_decay: 900_000_000,
        dense_rounds: 0,
        outer_anneal: undefined,
        overlap_steps: 0,
        max_steps: undefined,
        exchange: { grace_ms: 1500, fetch_ms: 4000, fan_in: undefined },
        compression: { type: "Int8", value: { chunk: 256 } },
      },
      rounds: 5,
      reward_per_round: 30n * UNIT,
      min_providers: 4,
      max_providers: 4,
      min_provider_stake: 6_000n * UNIT,
      challenge_window: 16,
      // No initial weights: the seeded initialisation.
      initial_weights: undefined,
    });
    expect(spec).toHaveProperty("initial_weights", undefined);
  });

  it("converts examples/mnist-job.toml (an MLP on MNIST)", () => {
    const { spec } = buildJobSpec(
      form({
        dataset: "mnist",
        model: "mlp",
        mlpHidden: "64",
        mlpLayers: "1",
        rounds: "3",
        roundBlocks: "5",
        batchSize: "32",
        maxSteps: "100",
        lr: "0.002",
        warmupSteps: "0",
        outerMomentum: "0.5",
        rewardPerRound: "10",
        challengeWindow: "0",
      }),
      LIMITS,
    );
    expect(spec?.model).toEqual({ type: "MnistMlp", value: { hidden: 64, layers: 1 } });
    expect(spec?.training.max_steps).toBe(100);
    expect(spec?.dataset.content_hash).toBe(DATASETS.mnist.hash);
    expect(new TextDecoder().decode(spec?.dataset.uri)).toBe("grid:mnist");
    expect(spec?.reward_per_round).toBe(10n * UNIT);
  });

  it("mirrors the trainer's unit test: 10.5 GRID and momentum 0.5", () => {
    const { spec } = buildJobSpec(form({ rewardPerRound: "10.5", outerMomentum: "0.5", optimizer: "sgd", lr: "0.001" }));
    expect(spec?.reward_per_round).toBe(10n * UNIT + UNIT / 2n);
    expect(spec?.training.outer_momentum).toBe(500_000_000);
    expect(spec?.training.inner).toEqual({ type: "Sgd", value: { lr: 1_000_000 } });
  });

  it("reports each broken rule against its field", () => {
    expect(errorsOf({ lr: "-1" }).lr).toBeDefined();
    expect(errorsOf({ lr: "0" }).lr).toMatch(/above 0/);
    expect(errorsOf({ lr: "1.5" }).lr).toMatch(/at most 1/);
    expect(errorsOf({ rewardPerRound: "-3" }).rewardPerRound).toBeDefined();
    expect(errorsOf({ rewardPerRound: "0" }).rewardPerRound).toMatch(/above 0/);
    expect(errorsOf({ gptHeads: "3" }).gptHeads).toMatch(/divide/);
    // Each dimension is bounded as the chain bounds it, whatever the parameter count.
    expect(errorsOf({ gptContext: String(2 ** 20 + 1) }).gptContext).toMatch(/between 1 and 1048576/);
    expect(errorsOf({ gptLayers: "1025" }).gptLayers).toMatch(/between 1 and 1024/);
    const mlp = { dataset: "mnist", model: "mlp" } as const;
    expect(errorsOf({ ...mlp, mlpHidden: "1920767687", mlpLayers: "6" }).mlpHidden).toMatch(/between 1 and 1048576/);
    expect(errorsOf({ dataset: "mnist" }).model).toMatch(/MNIST needs/);
    expect(errorsOf({ model: "mlp" }).model).toMatch(/text needs/);
    expect(errorsOf({ outerLr: "0" }).outerLr).toBeDefined();
    expect(errorsOf({ outerMomentum: "1" }).outerMomentum).toMatch(/below 1/);
    expect(errorsOf({ errorDecay: "1.01" }).errorDecay).toMatch(/at most 1/);
    expect(errorsOf({ errorDecay: "1" }).errorDecay).toBeUndefined();
    expect(errorsOf({ errorDecay: "0" }).errorDecay).toBeUndefined();
    expect(errorsOf({ denseRounds: "-1" }).denseRounds).toBeDefined();
    expect(errorsOf({ rounds: "5", denseRounds: "6" }).denseRounds).toMatch(/at most the rounds/);
    expect(errorsOf({ rounds: "5", denseRounds: "5" }).denseRounds).toBeUndefined();
    expect(buildJobSpec(form({ denseRounds: "2" }), LIMITS).spec?.training.dense_rounds).toBe(2);
  });

  it("anneals the outer learning rate only as the chain allows (BadOuterAnneal)", () => {
    expect(errorsOf({ rounds: "5", annealRounds: "6" }).annealRounds).toMatch(/at most the rounds/);
    expect(errorsOf({ annealRounds: "-1" }).annealRounds).toBeDefined();
    expect(errorsOf({ annealRounds: "2", annealToLr: "0" }).annealToLr).toMatch(/above 0/);
    expect(errorsOf({ outerLr: "0.7", annealRounds: "2", annealToLr: "1" }).annealToLr).toMatch(/at most the outer/);
    const spec = (patch: Partial<JobForm>) => buildJobSpec(form(patch), LIMITS).spec?.training.outer_anneal;
    expect(spec({ annealRounds: "" })).toBeUndefined();
    expect(spec({ annealRounds: "0" })).toBeUndefined();
    expect(spec({ outerLr: "3", annealRounds: "2", annealToLr: "1" })).toEqual({ rounds: 2, to_lr: 1_000_000_000 });
    expect(errorsOf({ overlapSteps: "-1" }).overlapSteps).toBeDefined();
    expect(errorsOf({ overlapSteps: "4294967296" }).overlapSteps).toBeDefined();
    expect(errorsOf({ overlapSteps: "5" }).overlapSteps).toBeUndefined();
    expect(errorsOf({ maxSteps: "0" }).maxSteps).toBeDefined();
    expect(errorsOf({ maxSteps: "x" }).maxSteps).toBeDefined();
    expect(errorsOf({ maxSteps: "50", overlapSteps: "50" }).overlapSteps).toBeDefined();
    expect(errorsOf({ maxSteps: "50", overlapSteps: "49" }).overlapSteps).toBeUndefined();
    expect(buildJobSpec(form({ maxSteps: " 50 " }), LIMITS).spec?.training.max_steps).toBe(50);
    expect(errorsOf({ batchSize: "0" }).batchSize).toBeDefined();
    expect(errorsOf({ rounds: "0" }).rounds).toBeDefined();
    expect(errorsOf({ rounds: "100001" }).rounds).toMatch(/at most 100000/);
    expect(errorsOf({ roundBlocks: "1" }).roundBlocks).toMatch(/at least 2/);
    expect(errorsOf({ roundBlocks: "20000" }).roundBlocks).toMatch(/at most/);
    expect(errorsOf({ minProviders: "0" }).minProviders).toBeDefined();
    expect(errorsOf({ minProviders: "5", maxProviders: "4" }).minProviders).toMatch(/maximum/);
    expect(errorsOf({ maxProviders: "65" }).maxProviders).toMatch(/at most 64/);
    expect(errorsOf({ maxProviders: "65" }, undefined).maxProviders).toMatch(/at most 64/);
    expect(errorsOf({ challengeWindow: "7201" }).challengeWindow).toMatch(/at most 7200/);
    // 100 rounds of a day run 100 days: past the chain's 90 (pallet error JobTooLong).
    expect(errorsOf({ rounds: "100", roundBlocks: "14400" }).rounds).toMatch(/rounds × round blocks may be at most 1296000/);
    expect(errorsOf({ rounds: "90", roundBlocks: "14400" }).rounds).toBeUndefined();
    expect(errorsOf({ compression: "int8", chunk: "0" }).chunk).toBeDefined();
    expect(errorsOf({ compression: "topk", chunk: "4", k: "5" }).k).toMatch(/chunk/);
    expect(errorsOf({ compression: "topk", valueBits: "9" }).valueBits).toBeDefined();
    expect(errorsOf({ compression: "tiles", k: "4097" }).k).toMatch(/4096/);
    expect(errorsOf({ compression: "tiles", k: "0" }).k).toBeDefined();
    const tiles = buildJobSpec(form({ compression: "tiles", k: "64", chunk: "not read" }), LIMITS);
    expect(tiles.errors).toBeUndefined();
    expect(tiles.spec?.training.compression).toEqual({ type: "Tiles", value: { k: 64 } });
    expect(describeCompression({ type: "Tiles", value: { k: 64 } })).toBe("top-64 of each 64×64 tile, 2 bits");
    expect(errorsOf({ gptLayers: "2.5" }).gptLayers).toMatch(/whole number/);
    expect(errorsOf({ gptLayers: "70000" }).gptLayers).toMatch(/between 1 and 1024/);
    expect(errorsOf({ gptLayers: "100", gptWidth: "4096" }).model).toMatch(/10 billion/);
    expect(errorsOf({ minProviderStake: "1.0000000000001" }).minProviderStake).toMatch(/decimals/);
  });

  it("asks a job with a challenge window for enough providers to field a committee (TooFewToVerify)", () => {
    expect(errorsOf({ minProviders: "3" }).minProviders).toBe("at least 4 with a challenge window (or set the window to 0)");
    expect(errorsOf({ minProviders: "2", maxProviders: "2", challengeWindow: "1" }).minProviders).toMatch(/at least 4/);
    // Without a challenge window any committee size will do; at the minimum the window is fine.
    expect(errorsOf({ minProviders: "2", maxProviders: "2", challengeWindow: "0" })).toEqual({});
    expect(errorsOf({ minProviders: "4", maxProviders: "8" })).toEqual({});
    // The chain's constant, whatever it is; without the chain's limits it is not checked.
    expect(errorsOf({ minProviders: "4" }, { ...LIMITS, minVerifiableProviders: 5 }).minProviders).toMatch(/at least 5/);
    expect(buildJobSpec(form({ minProviders: "3" })).errors).toBeUndefined();
    // A range error on the field comes first.
    expect(errorsOf({ minProviders: "3", maxProviders: "2" }).minProviders).toMatch(/maximum/);
  });

  it("asks a job with a challenge window for a stake that makes cheating a losing bet (StakeTooLowToDeter)", () => {
    // 30 GRID a round at 1% audits and a 50% slash: 198 rounds' reward, 5,940 GRID.
    expect(errorsOf({ minProviderStake: "5939.999999999999" }).minProviderStake).toBe(
      "at least 5,940 GRID with a challenge window, or cheating pays: 1% of contributions are audited and fraud loses 50% of the stake (or set the window to 0)",
    );
    expect(errorsOf({ minProviderStake: "5940" })).toEqual({});
    expect(errorsOf({ rewardPerRound: "10", minProviderStake: "1980" })).toEqual({});
    expect(errorsOf({ rewardPerRound: "10", minProviderStake: "1979" }).minProviderStake).toMatch(/at least 1,980 GRID/);
    // No challenge window, no audits, or no chain limits: no rule.
    expect(errorsOf({ minProviderStake: "100", challengeWindow: "0" })).toEqual({});
    expect(errorsOf({ minProviderStake: "100" }, { ...LIMITS, auditRate: 0 })).toEqual({});
    expect(buildJobSpec(form({ minProviderStake: "100" })).errors).toBeUndefined();
    // A chain that slashes nothing for fraud deters no cheat.
    expect(errorsOf({ minProviderStake: "1000000" }, { ...LIMITS, fraudSlash: 0 }).minProviderStake).toMatch(
      /^no stake makes cheating a losing bet here \(1% of contributions are audited and fraud loses 0% of the stake\)/,
    );
    // The form's hint: the stake for the reward and window as typed.
    expect(neededStake(DEFAULT_FORM, LIMITS)).toBe(5_940n * UNIT);
    expect(neededStake({ ...DEFAULT_FORM, challengeWindow: "0" }, LIMITS)).toBeNull();
    expect(neededStake({ ...DEFAULT_FORM, rewardPerRound: "x" }, LIMITS)).toBeNull();
    expect(neededStake(DEFAULT_FORM)).toBeNull();
  });

  it("computes the deterrent stake as Deterrence::stake_for does", () => {
    // The Rust unit test's vectors (primitives/src/job.rs).
    const pct = (p: number) => p * 10_000_000;
    expect(stakeFor(pct(1), pct(50), 30n)).toBe(5_940n);
    expect(stakeFor(pct(10), pct(50), 1_000n)).toBe(18_000n);
    expect(stakeFor(pct(50), pct(100), 7n)).toBe(7n);
    expect(stakeFor(pct(3), pct(100), 1n)).toBe(33n);
    expect(stakeFor(0, pct(50), 30n)).toBeNull();
    expect(stakeFor(pct(1), 0, 30n)).toBe(U128_MAX);
    expect(stakeFor(pct(1), pct(50), U128_MAX / 2n)).toBe(U128_MAX);
    expect(stakeFor(pct(100), pct(50), 30n)).toBe(0n);
  });

  it("counts parameters like ModelSpec::parameters", () => {
    const w = 128n;
    const gpt = { type: "Gpt" as const, value: { vocab: 256, context: 64, layers: 4, heads: 4, width: 128 } };
    expect(parameters(gpt)).toBe(256n * w + 64n * w + 4n * (12n * w * w + 13n * w) + 2n * w + w * 256n);
    expect(parameters({ type: "MnistMlp", value: { hidden: 100, layers: 1 } })).toBe(784n * 100n + 100n + 1010n);
  });
});

// What `grid-trainer data publish` prints: the manifest's hash and the publisher's address.
const REF = "0x" + "ab".repeat(32);
const PEER = "12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN";
const HOLDER = `/ip4/127.0.0.1/tcp/40111/p2p/${PEER}`;
const own = (datasetHash: string, datasetUri: string) => checkOwnDataset({ datasetHash, datasetUri });
const bytes = (text: string) => Uint8Array.from(new TextEncoder().encode(text));

describe("the buyer's own dataset", () => {
  it("takes the reference with or without 0x, in either case, as lowercase with 0x", () => {
    expect(parseContentHash(REF)).toEqual({ hash: REF });
    expect(parseContentHash("AB".repeat(32))).toEqual({ hash: REF });
    expect(parseContentHash(`  0X${"Ab".repeat(32)}\n`)).toEqual({ hash: REF });
  });

  it("refuses a reference that is not 0x and exactly 64 hex digits, or is zero", () => {
    expect(parseContentHash("").error).toBe("enter the reference grid-trainer data publish printed (0x and 64 hex digits)");
    expect(parseContentHash("0x" + "ab".repeat(31)).error).toBe("must be 0x followed by exactly 64 hex digits (this has 62)");
    expect(parseContentHash("ab".repeat(33)).error).toBe("must be 0x followed by exactly 64 hex digits (this has 66)");
    expect(parseContentHash("0x" + "g".repeat(64)).error).toBe("must be 0x followed by exactly 64 hex digits");
    expect(parseContentHash("0x").error).toBe("must be 0x followed by exactly 64 hex digits");
    expect(parseContentHash(`0x ${"ab".repeat(32)}`).error).toBe("must be 0x followed by exactly 64 hex digits");
    expect(parseContentHash("0x" + "0".repeat(64)).error).toBe("the zero hash names no dataset");
  });

  it("reads the URIs the trainers read", () => {
    for (const uri of [
      HOLDER,
      `${HOLDER} /ip4/10.0.0.2/tcp/40112/p2p/${PEER}`,
      `${HOLDER},/dns4/holder.example/tcp/4001/p2p/${PEER}`,
      `/ip6/::1/udp/4001/quic-v1/p2p/${PEER}`,
      "file:///data/corpus.txt",
      "http://holder.example:8080/corpus.bin",
      "grid:mnist",
      "grid:shakespeare",
    ]) {
      expect(datasetUriProblem(uri), uri).toBeUndefined();
    }
  });

  it("refuses the URIs the trainers refuse, saying why", () => {
    expect(datasetUriProblem("")).toBe("enter where providers fetch the dataset: the URI grid-trainer data publish printed");
    expect(datasetUriProblem("ipfs://holder.example/corpus.bin")).toBe(
      "must be libp2p holder addresses (/ip4/…/p2p/<peer id>), file://…, http(s)://… or grid:<shipped name>",
    );
    expect(datasetUriProblem("https://")).toBe("https:// needs a host and a file: https://host/file");
    expect(datasetUriProblem("/ip4/127.0.0.1/tcp/40111")).toBe("holder address /ip4/127.0.0.1/tcp/40111 has no /p2p/<peer id>");
    expect(datasetUriProblem("/ip4/127.0.0.1/tcp/40111/p2p/")).toBe("holder address /ip4/127.0.0.1/tcp/40111/p2p/ has no /p2p/<peer id>");
    expect(datasetUriProblem(`${HOLDER} holder.example:4001`)).toBe(
      '"holder.example:4001" is not a libp2p address (/ip4/…/tcp/…/p2p/<peer id>)',
    );
    expect(datasetUriProblem("grid:cifar")).toBe('no shipped dataset is called "cifar" (shipped: shakespeare, mnist)');
    expect(datasetUriProblem("grid:constructor")).toBe('no shipped dataset is called "constructor" (shipped: shakespeare, mnist)');
    expect(datasetUriProblem("file://")).toBe("file:// needs a path: file:///path/to/data");
    expect(datasetUriProblem("http://")).toBe("http:// needs a host and a file: http://host/file");
    const other = "must be libp2p holder addresses (/ip4/…/p2p/<peer id>), file://…, http(s)://… or grid:<shipped name>";
    expect(datasetUriProblem("ipfs://bafy")).toBe(other);
    expect(datasetUriProblem("HTTP://holder.example/corpus.bin")).toBe(other);
    expect(datasetUriProblem("holder.example")).toBe(other);
  });

  it("bounds the URI at 256 bytes of UTF-8, as the chain stores it", () => {
    expect(datasetUriProblem("file:///" + "a".repeat(248))).toBeUndefined();
    expect(datasetUriProblem("file:///" + "a".repeat(249))).toBe("257 bytes long: at most 256 (UTF-8)");
    // 124 two-byte letters: 248 characters' worth of bytes, 256 with the scheme; one more is too many.
    expect(datasetUriProblem("file:///" + "é".repeat(124))).toBeUndefined();
    expect(datasetUriProblem("file:///" + "é".repeat(125))).toBe("258 bytes long: at most 256 (UTF-8)");
  });

  it("checks both fields together, trims the URI and puts each problem on its field", () => {
    expect(own(` ${"AB".repeat(32)} `, `  ${HOLDER}  `)).toEqual({ dataset: { hash: REF, uri: HOLDER } });
    expect(own("", "").errors).toEqual({
      datasetHash: "enter the reference grid-trainer data publish printed (0x and 64 hex digits)",
      datasetUri: "enter where providers fetch the dataset: the URI grid-trainer data publish printed",
    });
    expect(own(REF, "ipfs://x/y").errors).toEqual({ datasetUri: expect.stringMatching(/^must be libp2p holder addresses/) });
    expect(own(REF, "https://x/y").errors).toBeUndefined();
    expect(own("0x12", HOLDER).errors).toEqual({ datasetHash: "must be 0x followed by exactly 64 hex digits (this has 2)" });
  });

  it("takes a grid: URI only with that shipped dataset's reference", () => {
    expect(own(DATASETS.mnist.hash.toUpperCase().replace("0X", ""), "grid:mnist")).toEqual({
      dataset: { hash: DATASETS.mnist.hash, uri: "grid:mnist" },
    });
    expect(own(REF, "grid:mnist").errors).toEqual({
      datasetHash: `not the reference of shipped mnist: that is ${DATASETS.mnist.hash}`,
    });
    expect(own(DATASETS.shakespeare.hash, "grid:mnist").errors?.datasetHash).toMatch(/^not the reference of shipped mnist/);
  });

  it("builds the spec with the reference and the URI's bytes, whatever the model", () => {
    const { spec, errors } = buildJobSpec(form({ dataset: "own", datasetHash: REF.slice(2).toUpperCase(), datasetUri: ` ${HOLDER}` }), LIMITS);
    expect(errors).toBeUndefined();
    expect(spec?.dataset).toEqual({ content_hash: REF, uri: bytes(HOLDER) });
    // The form cannot know which models read the buyer's data: any goes.
    for (const model of ["gpt", "mlp", "cnn", "transformer", "resnet"] as const) {
      expect(errorsOf({ dataset: "own", datasetHash: REF, datasetUri: HOLDER, model })).toEqual({});
    }
  });

  it("reports the own dataset's problems against its fields, and ignores them for a shipped dataset", () => {
    expect(errorsOf({ dataset: "own" })).toEqual({
      datasetHash: expect.stringMatching(/^enter the reference/),
      datasetUri: expect.stringMatching(/^enter where providers fetch/),
    });
    expect(errorsOf({ dataset: "own", datasetHash: REF, datasetUri: "ipfs://x/y", gptHeads: "3" })).toEqual({
      gptHeads: "must divide the width",
      datasetUri: expect.stringMatching(/^must be libp2p holder addresses/),
    });
    expect(errorsOf({ dataset: "shakespeare", datasetHash: "junk", datasetUri: "ipfs://x/y" })).toEqual({});
  });

  it("holds a shipped dataset named as one's own to the models that read it", () => {
    const mnist = { dataset: "own", datasetHash: DATASETS.mnist.hash, datasetUri: "grid:mnist" } as const;
    expect(errorsOf({ ...mnist, model: "gpt" }).model).toBe("MNIST needs the MLP, the CNN or the ResNet");
    expect(buildJobSpec(form({ ...mnist, model: "mlp" }), LIMITS).spec?.dataset).toEqual({
      content_hash: DATASETS.mnist.hash,
      uri: bytes("grid:mnist"),
    });
  });

  it("names a job's dataset: the shipped one's label when reference and URI match, otherwise own", () => {
    expect(describeDataset({ content_hash: DATASETS.mnist.hash, uri: bytes("grid:mnist") })).toEqual({
      hash: DATASETS.mnist.hash,
      uri: "grid:mnist",
      shipped: "mnist",
      label: "MNIST digits",
    });
    expect(describeDataset({ content_hash: REF, uri: bytes(HOLDER) })).toEqual({ hash: REF, uri: HOLDER, shipped: undefined, label: "own dataset" });
    // A shipped URI under another reference is no shipped dataset.
    expect(shippedDataset({ hash: REF, uri: "grid:mnist" })).toBeUndefined();
    expect(shippedDataset({ hash: DATASETS.mnist.hash, uri: "grid:shakespeare" })).toBeUndefined();
  });
});

describe("where a dataset reference comes from", () => {
  it("reads the sources the trainers read (source.rs `Source`)", () => {
    expect(datasetOrigin({ hash: DATASETS.mnist.hash, uri: " grid:mnist " })).toEqual({ kind: "shipped", name: "mnist" });
    // Before the reference is typed, the name alone.
    expect(datasetOrigin({ uri: "grid:shakespeare" })).toEqual({ kind: "shipped", name: "shakespeare" });
    const relayed = `/ip4/10.0.0.1/tcp/1/p2p/${PEER}/p2p-circuit/p2p/${PEER}`;
    expect(datasetOrigin({ hash: REF, uri: `${HOLDER}, ${relayed}` })).toEqual({
      kind: "holders",
      holders: [
        { address: HOLDER, peer: PEER },
        { address: relayed, peer: PEER },
      ],
    });
    expect(datasetOrigin({ hash: REF, uri: "file:///srv/d" })).toEqual({ kind: "file", path: "/srv/d" });
    expect(datasetOrigin({ hash: REF, uri: "http://h/x.bin" })).toEqual({ kind: "http", url: "http://h/x.bin" });
  });

  it("refuses what the trainers refuse, with the form's messages", () => {
    expect(datasetOrigin({ hash: REF, uri: "/ip4/127.0.0.1/tcp/1" })).toEqual({
      kind: "refused",
      problem: "holder address /ip4/127.0.0.1/tcp/1 has no /p2p/<peer id>",
    });
    expect(datasetOrigin({ hash: REF, uri: "ipfs://Qm" })).toEqual({ kind: "refused", problem: datasetUriProblem("ipfs://Qm") });
    expect(datasetOrigin({ hash: REF, uri: "grid:mnist" })).toEqual({ kind: "refused", problem: own(REF, "grid:mnist").errors?.datasetHash });
    expect(datasetOrigin({ hash: DATASETS.mnist.hash, uri: "grid:mnist" }, true)).toEqual({
      kind: "refused",
      problem: checkInitialWeights({ weightsHash: DATASETS.mnist.hash, weightsUri: "grid:mnist" }).errors?.weightsUri,
    });
  });

  it("gives the command that shows a reference's format, files and sizes", () => {
    expect(dataInfoCommand({ hash: REF, uri: ` ${HOLDER} ` })).toBe(`grid-trainer data info --reference ${REF} --uri "${HOLDER}"`);
  });
});

const WEIGHTS = "0x" + "cd".repeat(32);
const weights = (weightsHash: string, weightsUri: string) => checkInitialWeights({ weightsHash, weightsUri });

describe("the initial weights (fine-tuning)", () => {
  it("are none when both fields are empty or blank", () => {
    expect(weights("", "")).toEqual({ weights: undefined });
    expect(weights("  ", "\n")).toEqual({ weights: undefined });
    expect(buildJobSpec(DEFAULT_FORM, LIMITS).spec?.initial_weights).toBeUndefined();
  });

  it("take a reference and a URI as the buyer's own dataset does: trimmed, the reference lowercase with 0x", () => {
    expect(weights(` ${"CD".repeat(32)} `, `  ${HOLDER}  `)).toEqual({ weights: { hash: WEIGHTS, uri: HOLDER } });
    expect(weights(WEIGHTS, "file:///models/llama.safetensors")).toEqual({
      weights: { hash: WEIGHTS, uri: "file:///models/llama.safetensors" },
    });
    expect(weights(WEIGHTS, "http://holder.example:8080/gpt2.safetensors").weights?.uri).toBe("http://holder.example:8080/gpt2.safetensors");
  });

  it("put each problem on its field, with the own dataset's messages", () => {
    expect(weights(WEIGHTS, "").errors).toEqual({
      weightsUri: "enter where providers fetch the weights: the URI grid-trainer data publish printed",
    });
    expect(weights("", HOLDER).errors).toEqual({
      weightsHash: "enter the reference grid-trainer data publish printed (0x and 64 hex digits)",
    });
    expect(weights("0x1234", HOLDER).errors).toEqual({ weightsHash: "must be 0x followed by exactly 64 hex digits (this has 4)" });
    expect(weights("0x" + "0".repeat(64), HOLDER).errors).toEqual({ weightsHash: "the zero hash names no dataset" });
    expect(weights(WEIGHTS, "ipfs://x/y.safetensors").errors).toEqual({ weightsUri: expect.stringMatching(/^must be libp2p holder addresses/) });
    expect(weights(WEIGHTS, "https://x/y.safetensors").errors).toBeUndefined();
    expect(weights(WEIGHTS, "/ip4/127.0.0.1/tcp/40111").errors).toEqual({
      weightsUri: "holder address /ip4/127.0.0.1/tcp/40111 has no /p2p/<peer id>",
    });
    expect(weights(WEIGHTS, "file:///" + "a".repeat(249)).errors).toEqual({ weightsUri: "257 bytes long: at most 256 (UTF-8)" });
    expect(weights("junk", "ipfs://bafy").errors).toEqual({
      weightsHash: "must be 0x followed by exactly 64 hex digits",
      weightsUri: "must be libp2p holder addresses (/ip4/…/p2p/<peer id>), file://…, http(s)://… or grid:<shipped name>",
    });
  });

  it("are never a shipped dataset: those are training data", () => {
    expect(weights(DATASETS.shakespeare.hash, "grid:shakespeare").errors).toEqual({
      weightsUri: "grid: names shipped training data, not weights: publish them with grid-trainer data publish FILE --format weights",
    });
    expect(weights(WEIGHTS, "grid:llama").errors?.weightsUri).toMatch(/^grid: names shipped training data, not weights/);
  });

  it("go into the spec as the chain stores them, with any dataset and model", () => {
    const { spec, errors } = buildJobSpec(form({ weightsHash: WEIGHTS.toUpperCase().replace("0X", "0x"), weightsUri: ` ${HOLDER}` }), LIMITS);
    expect(errors).toBeUndefined();
    expect(spec?.initial_weights).toEqual({ content_hash: WEIGHTS, uri: bytes(HOLDER) });
    // The dataset is untouched.
    expect(spec?.dataset).toEqual({ content_hash: DATASETS.shakespeare.hash, uri: bytes("grid:shakespeare") });
    const own = { dataset: "own", datasetHash: REF, datasetUri: "file:///data/corpus.bin", model: "transformer" } as const;
    expect(buildJobSpec(form({ ...own, weightsHash: WEIGHTS, weightsUri: "file:///models/llama.safetensors" }), LIMITS).spec).toMatchObject({
      dataset: { content_hash: REF, uri: bytes("file:///data/corpus.bin") },
      initial_weights: { content_hash: WEIGHTS, uri: bytes("file:///models/llama.safetensors") },
    });
  });

  it("block the spec while half typed or malformed, reporting against their fields with the rest", () => {
    expect(errorsOf({ weightsHash: WEIGHTS })).toEqual({ weightsUri: expect.stringMatching(/^enter where providers fetch the weights/) });
    expect(errorsOf({ weightsUri: HOLDER, gptHeads: "3" })).toEqual({
      gptHeads: "must divide the width",
      weightsHash: expect.stringMatching(/^enter the reference/),
    });
    expect(buildJobSpec(form({ weightsHash: "0x12", weightsUri: HOLDER }), LIMITS).spec).toBeUndefined();
  });

  it("are described from the chain's form: reference and URI as text, none without", () => {
    expect(describeInitialWeights({ content_hash: WEIGHTS, uri: bytes(HOLDER) })).toEqual({ hash: WEIGHTS, uri: HOLDER });
    expect(describeInitialWeights(undefined)).toBeUndefined();
  });
});

describe("escrow", () => {
  it("is rounds × (reward + ⌈fee⌉), the budget pallet-jobs holds", () => {
    const { spec } = buildJobSpec(DEFAULT_FORM, LIMITS);
    // Measured on a dev node: the default job held 151.5 GRID with the 1% protocol fee.
    expect(escrowOf(spec!, 10_000_000)).toEqual({
      rewardPerRound: 30n * UNIT,
      feePerRound: 3n * UNIT / 10n,
      perRound: 303n * UNIT / 10n,
      rounds: 5,
      total: 151_500_000_000_000n,
    });
    expect(escrowOf({ reward_per_round: 1n, rounds: 3 }, 10_000_000).total).toBe(6n);
  });
});

/** The Rust unit test's configurations (primitives/src/job.rs): Llama-style, untied. */
const LLAMA: TransformerConfig = {
  vocab: 1000,
  context: 64,
  layers: 3,
  width: 96,
  heads: 6,
  kv_heads: 2,
  mlp_width: 256,
  activation: { type: "SwiGlu", value: undefined },
  norm: { type: "RmsNorm", value: undefined },
  position: { type: "Rope", value: undefined },
  tied_embeddings: false,
};
/** GPT-2-style: GELU, layer norm, learned positions, tied embeddings. */
const GPT2: TransformerConfig = {
  ...LLAMA,
  activation: { type: "Gelu", value: undefined },
  norm: { type: "LayerNorm", value: undefined },
  position: { type: "Learned", value: undefined },
  tied_embeddings: true,
};
const transformer = (patch: Partial<JobForm>) => form({ model: "transformer", ...patch });
const transformerErrors = (patch: Partial<JobForm>) => errorsOf({ model: "transformer", ...patch });

describe("the transformer", () => {
  it("counts parameters like TransformerConfig::parameters, for Llama and GPT-2 styles", () => {
    // Per block: q, o (w²), k, v (w × kv heads × head width), the MLP, two norms.
    const llama = 1000 * 96 + 3 * (2 * 96 * 96 + 2 * 96 * 32 + 3 * 96 * 256 + 2 * 96) + 96 + 96 * 1000;
    expect(transformerParameters(LLAMA)).toBe(BigInt(llama));
    expect(parameters({ type: "Transformer", value: LLAMA })).toBe(487_584n);
    const gpt2 = 1000 * 96 + 64 * 96 + 3 * (2 * 96 * 96 + 2 * 96 * 32 + 2 * 96 * 256 + 4 * 96) + 2 * 96;
    expect(parameters({ type: "Transformer", value: GPT2 })).toBe(BigInt(gpt2));
    expect(gpt2).toBe(324_672);
  });

  it("counts exactly past 2^53", () => {
    const huge = { ...LLAMA, vocab: 1 << 20, context: 1 << 20, layers: 1 << 10, width: 1 << 16, heads: 1, kv_heads: 1, mlp_width: 1 << 20 };
    const [v, l, w, m] = [1n << 20n, 1n << 10n, 1n << 16n, 1n << 20n];
    expect(transformerParameters(huge)).toBe(v * w + l * (2n * w * w + 2n * w * w + 3n * w * m + 2n * w) + w + w * v);
  });

  it("converts examples/llama-job.toml's model", () => {
    const { spec, errors } = buildJobSpec(transformer({}), LIMITS);
    expect(errors).toBeUndefined();
    expect(spec?.model).toEqual({
      type: "Transformer",
      value: {
        vocab: 256,
        context: 64,
        layers: 2,
        width: 64,
        heads: 4,
        kv_heads: 2,
        mlp_width: 172,
        activation: { type: "SwiGlu", value: undefined },
        norm: { type: "RmsNorm", value: undefined },
        position: { type: "Rope", value: undefined },
        tied_embeddings: true,
      },
    });
    expect(spec?.dataset.content_hash).toBe(DATASETS.shakespeare.hash);
  });

  it("builds each knob as the descriptors' enums spell it", () => {
    const gpt2 = buildJobSpec(
      transformer({ transformerActivation: "gelu", transformerNorm: "layernorm", transformerPosition: "learned", transformerTied: false }),
      LIMITS,
    );
    expect(gpt2.spec?.model).toMatchObject({
      type: "Transformer",
      value: {
        activation: { type: "Gelu", value: undefined },
        norm: { type: "LayerNorm", value: undefined },
        position: { type: "Learned", value: undefined },
        tied_embeddings: false,
      },
    });
  });

  it("refuses a zero or out-of-bounds dimension, each on its field", () => {
    const fields = [
      ["transformerVocab", 1 << 20],
      ["transformerContext", 1 << 20],
      ["transformerLayers", 1 << 10],
      ["transformerWidth", 1 << 16],
      ["transformerHeads", 0xffff],
      ["transformerKvHeads", 0xffff],
      ["transformerMlpWidth", 1 << 20],
    ] as const;
    for (const [field, max] of fields) {
      expect(transformerErrors({ dataset: "own", datasetHash: REF, datasetUri: HOLDER, [field]: "0" })[field], field).toBe(`must be between 1 and ${max}`);
      expect(transformerErrors({ dataset: "own", datasetHash: REF, datasetUri: HOLDER, [field]: String(max + 1) })[field], field).toBe(
        `must be between 1 and ${max}`,
      );
    }
    expect(transformerErrors({ transformerLayers: "2.5" }).transformerLayers).toBe("must be a whole number");
  });

  it("checks the shape as TransformerConfig::well_formed does", () => {
    expect(transformerErrors({ transformerHeads: "5", transformerKvHeads: "1" })).toEqual({ transformerHeads: "must divide the width" });
    expect(transformerErrors({ transformerKvHeads: "3" })).toEqual({ transformerKvHeads: "must divide the heads" });
    // Grouped-query attention down to one key/value head, or one per query head.
    expect(transformerErrors({ transformerKvHeads: "1" })).toEqual({});
    expect(transformerErrors({ transformerKvHeads: "4" })).toEqual({});
    // RoPE rotates pairs: a head width of 15 (60 ÷ 4) is refused with RoPE, not with learned positions.
    expect(transformerErrors({ transformerWidth: "60" })).toEqual({
      transformerHeads: "with RoPE the head width (width ÷ heads = 15) must be even",
    });
    expect(transformerErrors({ transformerWidth: "60", transformerPosition: "learned" })).toEqual({});
  });

  it("reads token streams: shakespeare as bytes (a vocabulary of 256) and any own dataset, not MNIST", () => {
    expect(transformerErrors({ transformerVocab: "50257" })).toEqual({
      transformerVocab: "the shipped text is bytes: the vocabulary must be 256",
    });
    expect(transformerErrors({ transformerVocab: "255" }).transformerVocab).toMatch(/must be 256/);
    const own = { dataset: "own", datasetHash: REF, datasetUri: HOLDER } as const;
    expect(transformerErrors({ ...own, transformerVocab: "50257" })).toEqual({});
    // Shakespeare named as one's own is still bytes.
    const text = { dataset: "own", datasetHash: DATASETS.shakespeare.hash, datasetUri: "grid:shakespeare" } as const;
    expect(transformerErrors({ ...text, transformerVocab: "1000" }).transformerVocab).toMatch(/must be 256/);
    expect(transformerErrors({ dataset: "mnist" })).toEqual({ model: "MNIST needs the MLP, the CNN or the ResNet" });
    expect(errorsOf({ model: "cnn" }).model).toBe("text needs the GPT or the transformer");
  });

  it("refuses a model above 10 billion parameters", () => {
    const own = { dataset: "own", datasetHash: REF, datasetUri: HOLDER } as const;
    expect(transformerErrors({ ...own, transformerLayers: "1024", transformerWidth: "16384" }).model).toMatch(
      /^\d+ parameters is above the limit of 10 billion$/,
    );
  });

  it("is described with every knob and its parameter count", () => {
    expect(describeModel(buildJobSpec(transformer({}), LIMITS).spec!.model)).toBe(
      "Transformer 2×64, 4 heads (2 kv), MLP 172 SwiGLU, RMSNorm, RoPE, tied embeddings, vocab 256, context 64 (107.3k params)",
    );
    expect(describeModel({ type: "Transformer", value: GPT2 })).toBe(
      "Transformer 3×96, 6 heads (2 kv), MLP 256 GELU, LayerNorm, learned positions, tied embeddings, vocab 1000, context 64 (324.7k params)",
    );
    expect(describeModel({ type: "Transformer", value: LLAMA })).toMatch(/, untied embeddings, vocab 1000, context 64 \(487\.6k params\)$/);
  });
});

/** The Rust unit test's configuration (primitives/src/resnet.rs): a CIFAR-10 ResNet-20. */
const CIFAR: ResNetConfig = { channels: 3, side: 32, classes: 10, width: 16, stages: 3, blocks: 3 };
const resnet = (patch: Partial<JobForm>) => form({ dataset: "mnist", model: "resnet", ...patch });
const resnetErrors = (patch: Partial<JobForm>) => errorsOf({ dataset: "mnist", model: "resnet", ...patch });
/** The buyer's own dataset: any image shape goes. */
const OWN = { dataset: "own", datasetHash: REF, datasetUri: HOLDER } as const;

describe("the ResNet", () => {
  it("counts parameters like ResNetConfig::parameters: convolutions with biases, a gain per block, the classifier", () => {
    // Written out convolution by convolution (k × k × inputs × outputs + outputs), as the Rust test does.
    const stem = 9 * 3 * 16 + 16;
    const stage0 = 6 * (9 * 16 * 16 + 16);
    const stage1 = 9 * 16 * 32 + 32 + (9 * 32 * 32 + 32) + (16 * 32 + 32) + 4 * (9 * 32 * 32 + 32);
    const stage2 = 9 * 32 * 64 + 64 + (9 * 64 * 64 + 64) + (32 * 64 + 64) + 4 * (9 * 64 * 64 + 64);
    const cifar = stem + stage0 + stage1 + stage2 + 9 + (64 * 10 + 10);
    expect(cifar).toBe(271_699);
    expect(resnetParameters(CIFAR)).toBe(BigInt(cifar));
    expect(parameters({ type: "ResNet", value: CIFAR })).toBe(271_699n);
    // examples/resnet-mnist-job.toml: a stem to 8, a block at 8, a block at 16 with its shortcut, 2 gains, 16 → 10.
    const mnist = 9 * 8 + 8 + 2 * (9 * 8 * 8 + 8) + (9 * 8 * 16 + 16) + (9 * 16 * 16 + 16) + (8 * 16 + 16) + 2 + (16 * 10 + 10);
    expect(resnetParameters({ channels: 1, side: 28, classes: 10, width: 8, stages: 2, blocks: 1 })).toBe(BigInt(mnist));
    expect(mnist).toBe(5_052);
    // One stage, one block: no shortcut; the side does not count.
    expect(resnetParameters({ channels: 1, side: 1024, classes: 2, width: 1, stages: 1, blocks: 1 })).toBe(BigInt(9 + 1 + 2 * 10 + 1 + 4));
  });

  it("counts the largest ResNet the bounds allow, stage by stage", () => {
    const [ch, k, w, stages, blocks] = [4n, 16_384n, 1_024n, 6, 32n];
    let sum = 9n * ch * w + w;
    for (let s = 0; s < stages; s++) {
      const c = w * 2n ** BigInt(s);
      sum += 2n * blocks * (9n * c * c + c);
      // A later stage's first block reads half the channels, and has a 1×1 shortcut.
      if (s > 0) sum += -9n * c * c + 9n * (c / 2n) * c + ((c / 2n) * c + c);
    }
    sum += BigInt(stages) * blocks + w * 32n * k + k;
    const largest = { channels: 4, side: 1024, classes: 16_384, width: 1024, stages: 6, blocks: 32 };
    expect(resnetParameters(largest)).toBe(sum);
    // Far above what a job may train (the form says so on the model).
    expect(sum > 10_000_000_000n).toBe(true);
  });

  it("converts examples/resnet-mnist-job.toml's model", () => {
    const { spec, errors } = buildJobSpec(resnet({}), LIMITS);
    expect(errors).toBeUndefined();
    expect(spec?.model).toEqual({ type: "ResNet", value: { channels: 1, side: 28, classes: 10, width: 8, stages: 2, blocks: 1 } });
    expect(spec?.dataset).toEqual({ content_hash: DATASETS.mnist.hash, uri: bytes("grid:mnist") });
    // CIFAR-10 from the buyer's own dataset.
    const cifar = { resnetChannels: "3", resnetSide: "32", resnetClasses: "10", resnetWidth: "16", resnetStages: "3", resnetBlocks: "3" };
    expect(buildJobSpec(resnet({ ...OWN, ...cifar }), LIMITS).spec?.model).toEqual({ type: "ResNet", value: CIFAR });
  });

  it("refuses a zero, one class or an out-of-bounds dimension, each on its field, as ResNetConfig::well_formed does", () => {
    const fields = [
      ["resnetChannels", 1, 4],
      ["resnetSide", 1, 1024],
      ["resnetClasses", 2, 16_384],
      ["resnetWidth", 1, 1024],
      ["resnetStages", 1, 6],
      ["resnetBlocks", 1, 32],
    ] as const;
    for (const [field, min, max] of fields) {
      expect(MODEL_BOUNDS[field], field).toBe(max);
      expect(resnetErrors({ ...OWN, [field]: "0" }), field).toEqual({ [field]: `must be between ${min} and ${max}` });
      expect(resnetErrors({ ...OWN, [field]: String(max + 1) }), field).toEqual({ [field]: `must be between ${min} and ${max}` });
      // At the bound, alone, it is taken.
      expect(resnetErrors({ ...OWN, [field]: String(max) }), field).toEqual({});
    }
    expect(resnetErrors({ ...OWN, resnetClasses: "1" })).toEqual({ resnetClasses: "must be between 2 and 16384" });
    expect(resnetErrors({ resnetBlocks: "1.5" })).toEqual({ resnetBlocks: "must be a whole number" });
    expect(resnetErrors({ resnetWidth: "" })).toEqual({ resnetWidth: "must be a whole number" });
    // Several at once: each on its field.
    expect(resnetErrors({ ...OWN, resnetChannels: "5", resnetStages: "0" })).toEqual({
      resnetChannels: "must be between 1 and 4",
      resnetStages: "must be between 1 and 6",
    });
  });

  it("refuses a ResNet above 10 billion parameters, though within every bound", () => {
    expect(resnetErrors({ ...OWN, resnetWidth: "1024", resnetStages: "6", resnetBlocks: "32" }).model).toMatch(
      /^\d+ parameters is above the limit of 10 billion$/,
    );
  });

  it("fits shipped MNIST only as 1×28×28 in 10 classes, and any shape of the buyer's own images", () => {
    expect(modelFits("mnist", "resnet")).toBe(true);
    expect(modelFits("shakespeare", "resnet")).toBe(false);
    expect(resnetErrors({})).toEqual({});
    // The width, stages and blocks are the buyer's.
    expect(resnetErrors({ resnetWidth: "32", resnetStages: "4", resnetBlocks: "3" })).toEqual({});
    const shape = "MNIST digits are 1×28×28 in 10 classes";
    expect(resnetErrors({ resnetChannels: "3" })).toEqual({ resnetChannels: `${shape}: the channels must be 1` });
    expect(resnetErrors({ resnetSide: "32" })).toEqual({ resnetSide: `${shape}: the side must be 28` });
    expect(resnetErrors({ resnetClasses: "100" })).toEqual({ resnetClasses: `${shape}: the classes must be 10` });
    // CIFAR-10's shape: each dimension that differs, on its field.
    expect(resnetErrors({ resnetChannels: "3", resnetSide: "32" })).toEqual({
      resnetChannels: `${shape}: the channels must be 1`,
      resnetSide: `${shape}: the side must be 28`,
    });
    // A bound comes first.
    expect(resnetErrors({ resnetClasses: "1" })).toEqual({ resnetClasses: "must be between 2 and 16384" });
    // Shipped MNIST named as one's own is still MNIST.
    const mnist = { dataset: "own", datasetHash: DATASETS.mnist.hash, datasetUri: "grid:mnist" } as const;
    expect(resnetErrors({ ...mnist, resnetSide: "32" })).toEqual({ resnetSide: `${shape}: the side must be 28` });
    // The buyer's own dataset: any well-formed shape.
    expect(resnetErrors({ ...OWN, resnetChannels: "3", resnetSide: "32", resnetClasses: "100" })).toEqual({});
    // Text is no image.
    expect(resnetErrors({ dataset: "shakespeare" })).toEqual({ model: "text needs the GPT or the transformer" });
  });

  it("is described with its shape, width, stages and blocks and its parameter count", () => {
    expect(describeModel(buildJobSpec(resnet({}), LIMITS).spec!.model)).toBe(
      "ResNet 1×28×28 → 10 classes, width 8, 2 stages × 1 block (5.1k params)",
    );
    expect(describeModel({ type: "ResNet", value: CIFAR })).toBe("ResNet 3×32×32 → 10 classes, width 16, 3 stages × 3 blocks (271.7k params)");
    expect(describeResNet({ ...CIFAR, stages: 1, blocks: 2 })).toBe("ResNet 3×32×32 → 10 classes, width 16, 1 stage × 2 blocks");
    expect(describeModel({ type: "ResNet", value: { ...CIFAR, width: 64, stages: 4, blocks: 2 } })).toMatch(
      /^ResNet 3×32×32 → 10 classes, width 64, 4 stages × 2 blocks \(\d+\.\d\dM params\)$/,
    );
  });
});
