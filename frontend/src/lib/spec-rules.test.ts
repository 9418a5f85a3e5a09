// The job form's rules against the trainer's: `spec-rules.json` is written and checked by the
// Rust test `the_web_uis_spec_rules_are_the_trainers` (trainer/src/daemon/job_spec.rs), so a change
// on either side that the other does not follow fails one of the two test suites.
import { describe, expect, it } from "vitest";
import rules from "./spec-rules.json";
import { buildJobSpec, DATASETS, type DatasetName, datasetUriProblem, DEFAULT_FORM, type JobForm, MODEL_BOUNDS, type ModelKind, modelFits, outerStepFor, stakeFor } from "./spec";
import { toNanos } from "./units";

/** The models in the order `web_ui_rules` lists them. */
const MODELS: ModelKind[] = ["mlp", "cnn", "resnet", "gpt", "transformer"];
/** Each model dimension's bound as the trainer writes it (by name: the file may lag the form). */
const bounds = rules.model_bounds as Record<string, number | undefined>;
/** `[audit rate, fraud slash (billionths), reward, stake or null]`, amounts as decimal strings. */
type DeterrenceVector = [number, number, string, string | null];
const deterrence = (rules as unknown as { deterrence?: DeterrenceVector[] }).deterrence;
/** `[dataset URI, whether the trainers read it]`. */
const uris = (rules as unknown as { uris?: [string, boolean][] }).uris;
/** The default exchange `[grace ms, fetch ms]` and `[round blocks, grace ms, fetch ms, allowed]`. */
const exchange = (rules as unknown as { exchange?: { default: [number, number]; cases: [number, number, number, boolean][]; fan_in?: [number | null, boolean][] } }).exchange;

describe("the job form follows the trainer's rules", () => {
  it("ships the same datasets under the same URIs and content hashes", () => {
    expect(Object.keys(DATASETS).sort()).toEqual(Object.keys(rules.datasets).sort());
    for (const [name, shipped] of Object.entries(rules.datasets)) {
      const ours = DATASETS[name as DatasetName];
      expect({ uri: ours.uri, hash: ours.hash }).toEqual(shipped);
    }
  });

  it("lets the same models train on each dataset", () => {
    for (const [name, kinds] of Object.entries(rules.fits)) {
      const ours = MODELS.filter((m) => modelFits(name as DatasetName, m));
      expect(ours).toEqual(kinds);
    }
  });

  it("bounds every model dimension where the chain does", () => {
    expect(MODEL_BOUNDS).toEqual(rules.model_bounds);
  });

  it("refuses each ResNet dimension one past the chain's bound, and takes it at the bound", () => {
    // The buyer's own dataset: no shipped image shape applies.
    const own: Partial<JobForm> = { dataset: "own", datasetHash: "0x" + "ab".repeat(32), datasetUri: "file:///data/images", model: "resnet" };
    const fields = ["resnetChannels", "resnetSide", "resnetClasses", "resnetWidth", "resnetStages", "resnetBlocks"] as const;
    for (const field of fields) {
      const bound = bounds[field];
      expect(bound, `spec-rules.json's model_bounds.${field}`).toBeTypeOf("number");
      const errors = (value: number) => buildJobSpec({ ...DEFAULT_FORM, ...own, [field]: String(value) }).errors ?? {};
      expect(errors(bound!), field).toEqual({});
      expect(errors(bound! + 1)[field], field).toMatch(new RegExp(`^must be between [12] and ${bound}$`));
    }
  });

  it("lets the ResNet the trainer's rules check (1×28×28, 10 classes) train on shipped MNIST", () => {
    const form = { ...DEFAULT_FORM, dataset: "mnist", model: "resnet", resnetWidth: "1", resnetStages: "1", resnetBlocks: "1" } as const;
    expect(buildJobSpec(form).spec?.model).toEqual({ type: "ResNet", value: { channels: 1, side: 28, classes: 10, width: 1, stages: 1, blocks: 1 } });
  });

  it("turns hyper-parameters into billionths as the trainer does, refusing the same values", () => {
    expect(rules.nanos.length).toBeGreaterThan(5);
    for (const [input, expected] of rules.nanos as [number | string, number | null][]) {
      const x = input === "NaN" ? Number.NaN : Number(input);
      const ours = toNanos(x);
      if (expected === null) expect(typeof ours, `${x} must be refused`).toBe("string");
      else expect(ours, `${x}`).toBe(expected);
    }
  });

  it("takes and refuses the dataset URIs the trainers do (trainer/src/data/source.rs)", () => {
    expect(uris?.length).toBeGreaterThan(10);
    for (const [uri, read] of uris!) {
      const problem = datasetUriProblem(uri.trim());
      if (read) expect(problem, uri).toBeUndefined();
      else expect(problem, uri).toBeTypeOf("string");
    }
  });

  it("suggests the outer step the trainer defaults to for each sparse code (Compression::default_outer_step)", () => {
    const defaults = (rules as unknown as { outer_defaults: Record<string, [number, number]> }).outer_defaults;
    for (const scheme of ["topk", "tiles"] as const) {
      const step = outerStepFor(scheme);
      expect([toNanos(Number(step.outerLr)), toNanos(Number(step.outerMomentum))], scheme).toEqual(defaults[scheme]);
    }
    expect(outerStepFor("int8")).toEqual({ outerLr: DEFAULT_FORM.outerLr, outerMomentum: DEFAULT_FORM.outerMomentum });
  });

  it("suggests the error decay a job file that names none gets (DEFAULT_ERROR_DECAY)", () => {
    const decay = (rules as unknown as { error_decay_default: number }).error_decay_default;
    expect(toNanos(Number(DEFAULT_FORM.errorDecay))).toBe(decay);
  });

  it.skipIf(!exchange)("gives a job the chain's exchange and refuses the exchanges the chain does (JobSpec::validate)", () => {
    expect([Number(DEFAULT_FORM.graceMs), Number(DEFAULT_FORM.fetchMs)]).toEqual(exchange!.default);
    expect(exchange!.cases.some(([, , , allowed]) => allowed)).toBe(true);
    expect(exchange!.cases.some(([, , , allowed]) => !allowed)).toBe(true);
    for (const [blocks, grace, fetch, allowed] of exchange!.cases) {
      const form = { ...DEFAULT_FORM, roundBlocks: String(blocks), graceMs: String(grace), fetchMs: String(fetch) };
      const errors = buildJobSpec(form).errors ?? {};
      const refused = errors.graceMs !== undefined || errors.fetchMs !== undefined;
      expect(refused, `${blocks} blocks, grace ${grace} ms, fetch ${fetch} ms`).toBe(!allowed);
    }
  });

  it.skipIf(!exchange?.fan_in)("takes the fan-ins the chain takes and refuses the others (ExchangeWindow::fan_in)", () => {
    expect(exchange!.fan_in!.some(([, allowed]) => !allowed)).toBe(true);
    for (const [fanIn, allowed] of exchange!.fan_in!) {
      const form = { ...DEFAULT_FORM, fanIn: fanIn === null ? "" : String(fanIn) };
      const built = buildJobSpec(form);
      expect(built.errors?.fanIn === undefined, `fan-in ${fanIn}`).toBe(allowed);
      if (allowed) expect(built.spec?.training.exchange.fan_in).toBe(fanIn ?? undefined);
    }
  });

  // Absent until the Rust test writes the file again; checked from then on.
  it.skipIf(!deterrence)("asks for the deterrent stake the chain does (Deterrence::stake_for)", () => {
    expect(deterrence!.length).toBeGreaterThan(3);
    for (const [q, slash, reward, stake] of deterrence!) {
      expect(stakeFor(q, slash, BigInt(reward)), `q ${q}, slash ${slash}, reward ${reward}`).toBe(stake === null ? null : BigInt(stake));
    }
  });
});
