// The job form's rules against the trainer's: `spec-rules.json` is written and checked by the
// Rust test `the_web_uis_spec_rules_are_the_trainers` (trainer/src/daemon/job_spec.rs), so a change
// on either side that the other does not follow fails one of the two test suites.
import { describe, expect, it } from "vitest";
import rules from "./spec-rules.json";
import { DATASETS, type DatasetName, MODEL_BOUNDS, type ModelKind, modelFits, stakeFor } from "./spec";
import { toNanos } from "./units";

const MODELS: ModelKind[] = ["mlp", "cnn", "gpt", "transformer"];
/** The models the trainer's rules list. The transformer only once `web_ui_rules` lists it (with a
 * vocabulary of 256) and the file is written again; until then the other three are checked. */
const listed = new Set(Object.values(rules.fits).flat());
const CHECKED = MODELS.filter((m) => m !== "transformer" || listed.has(m));
/** `[audit rate, fraud slash (billionths), reward, stake or null]`, amounts as decimal strings. */
type DeterrenceVector = [number, number, string, string | null];
const deterrence = (rules as unknown as { deterrence?: DeterrenceVector[] }).deterrence;

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
      const ours = CHECKED.filter((m) => modelFits(name as DatasetName, m));
      expect(ours).toEqual(kinds);
    }
  });

  it("bounds every model dimension where the chain does", () => {
    expect(MODEL_BOUNDS).toEqual(rules.model_bounds);
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

  // Absent until the Rust test writes the file again; checked from then on.
  it.skipIf(!deterrence)("asks for the deterrent stake the chain does (Deterrence::stake_for)", () => {
    expect(deterrence!.length).toBeGreaterThan(3);
    for (const [q, slash, reward, stake] of deterrence!) {
      expect(stakeFor(q, slash, BigInt(reward)), `q ${q}, slash ${slash}, reward ${reward}`).toBe(stake === null ? null : BigInt(stake));
    }
  });
});
