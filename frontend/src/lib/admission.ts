// A job's admission rules (grid-primitives `job::Admission`, checked by pallet-jobs when a
// provider joins): the form's optional fields → the `admission` argument of `create_job`, and
// the rules in words for the job page.
import type { GridCalls } from "@polkadot-api/descriptors";
import { getSs58AddressInfo } from "polkadot-api";
import { blocksToText } from "./format";
import { formatScore } from "./providers";
import { MAX_PROOF_PEERS, type FormErrors, type JobForm } from "./spec";
import { NANOS_ONE } from "./units";

/** Who may join a job besides holding its stake, as the generated descriptors type it. */
export type Admission = GridCalls["Jobs"]["create_job"]["admission"];

/** Most accounts an allowlist names (`MaxAllowlist`, as many as a job can have participants). */
export const MAX_ALLOWLIST = MAX_PROOF_PEERS;

/** The default: every provider with the stake may join. */
export const OPEN_ADMISSION: Admission = { min_health: 0, min_age: 0, allowlist: [] };

export type AdmissionForm = Pick<JobForm, "minHealth" | "minAge" | "allowlist">;

const U32_MAX = 0xffff_ffff;
/** Perbill parts per percent. */
const PARTS_PER_PERCENT = NANOS_ONE / 100;

/** A percentage ("80", "12.5") as Perbill parts, exactly (at most 7 decimals), or an error. */
export function parsePercent(text: string): number | string {
  const m = /^(\d+)(?:\.(\d*))?$/.exec(text.trim());
  if (!m) return "must be a percentage from 0 to 100";
  const [, whole = "", frac = ""] = m;
  if (frac.length > 7) return "at most 7 decimals";
  if (Number(whole) > 100) return "must be a percentage from 0 to 100";
  const parts = Number(whole) * PARTS_PER_PERCENT + Number(frac.padEnd(7, "0") || "0");
  return parts > NANOS_ONE ? "must be a percentage from 0 to 100" : parts;
}

/** The allowlist's non-blank lines, trimmed, with their line numbers (from 1). */
export function allowlistLines(text: string): { line: number; address: string }[] {
  return text
    .split(/\r?\n/)
    .map((address, i) => ({ line: i + 1, address: address.trim() }))
    .filter((l) => l.address !== "");
}

/** The 32-byte account an SS58 address names, as hex, or undefined when it names none. */
function accountId(address: string): string | undefined {
  try {
    const info = getSs58AddressInfo(address);
    if (!info.isValid || info.publicKey.length !== 32) return undefined;
    return Array.from(info.publicKey, (b) => b.toString(16).padStart(2, "0")).join("");
  } catch {
    return undefined;
  }
}

/** Checks the allowlist: at most 64 SS58 account addresses, each once. Addresses or an error. */
export function parseAllowlist(text: string): string[] | { error: string } {
  const lines = allowlistLines(text);
  const seen = new Map<string, number>();
  const bad: string[] = [];
  for (const { line, address } of lines) {
    const id = accountId(address);
    if (id === undefined) bad.push(`line ${line} ("${address.length > 20 ? `${address.slice(0, 20)}…` : address}") is not an SS58 account address`);
    else if (seen.has(id)) bad.push(`line ${line} names the account of line ${seen.get(id)} again`);
    else seen.set(id, line);
  }
  if (bad.length > 0) return { error: bad.length === 1 ? bad[0]! : `${bad[0]} (and ${bad.length - 1} more)` };
  if (lines.length > MAX_ALLOWLIST) return { error: `at most ${MAX_ALLOWLIST} accounts (${lines.length} given)` };
  return lines.map((l) => l.address);
}

/** Converts and checks the form's admission fields; every problem is reported against its field. */
export function buildAdmission(
  form: AdmissionForm,
): { admission: Admission; errors?: undefined } | { admission?: undefined; errors: FormErrors } {
  const errors: FormErrors = {};
  const health = parsePercent(form.minHealth);
  if (typeof health === "string") errors.minHealth = health;
  const ageText = form.minAge.trim();
  const age = Number(ageText);
  if (!/^\d+$/.test(ageText)) errors.minAge = "must be a whole number of blocks";
  else if (age > U32_MAX) errors.minAge = `must be at most ${U32_MAX} blocks`;
  const allowlist = parseAllowlist(form.allowlist);
  if (!Array.isArray(allowlist)) errors.allowlist = allowlist.error;
  if (Object.keys(errors).length > 0) return { errors };
  return { admission: { min_health: health as number, min_age: age, allowlist: allowlist as string[] } };
}

/** Whether the rules admit every provider with the stake (the chain's default). */
export function isOpenAdmission(a: Admission): boolean {
  return a.min_health === 0 && a.min_age === 0 && a.allowlist.length === 0;
}

/** The rules in words, one per rule; empty for the default. */
export function describeAdmission(a: Admission): string[] {
  const rules: string[] = [];
  if (a.min_health > 0) {
    const percent = Number((a.min_health / PARTS_PER_PERCENT).toPrecision(9));
    rules.push(`a health score of at least ${formatScore(a.min_health)} (${percent}%)`);
  }
  if (a.min_age > 0) rules.push(`registered for at least ${blocksToText(a.min_age)}`);
  if (a.allowlist.length > 0)
    rules.push(`on the allowlist (${a.allowlist.length} account${a.allowlist.length === 1 ? "" : "s"})`);
  return rules;
}

/** Who may join, in one line: "anyone with the stake", or the rules after it. */
export function admissionText(a: Admission): string {
  const rules = describeAdmission(a);
  return rules.length === 0 ? "anyone with the stake" : `providers with the stake, ${rules.join(", ")}`;
}
