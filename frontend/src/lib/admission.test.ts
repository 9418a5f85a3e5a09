import { AccountId } from "polkadot-api";
import { describe, expect, it } from "vitest";
import { ALICE, BOB, CHARLIE } from "../test/fixtures";
import {
  admissionText,
  buildAdmission,
  describeAdmission,
  isOpenAdmission,
  MAX_ALLOWLIST,
  OPEN_ADMISSION,
  parseAllowlist,
  parsePercent,
  type AdmissionForm,
} from "./admission";
import { DEFAULT_FORM } from "./spec";

const form = (patch: Partial<AdmissionForm>): AdmissionForm => ({ minHealth: "0", minAge: "0", allowlist: "", ...patch });
// //Alice's account under the Polkadot prefix (0) rather than the generic one (42).
const ALICE_POLKADOT = AccountId(0).dec(AccountId(42).enc(ALICE));

describe("admission rules from the job form", () => {
  it("are the chain's default (anyone with the stake) when left as they are", () => {
    expect(buildAdmission(DEFAULT_FORM)).toEqual({ admission: OPEN_ADMISSION });
    expect(buildAdmission(form({ minHealth: " 0 ", allowlist: "\n  \n" }))).toEqual({ admission: OPEN_ADMISSION });
    expect(isOpenAdmission(OPEN_ADMISSION)).toBe(true);
  });

  it("convert the health percentage to Perbill parts, exactly", () => {
    expect(parsePercent("80")).toBe(800_000_000);
    expect(parsePercent("12.5")).toBe(125_000_000);
    expect(parsePercent("0.0000001")).toBe(1);
    expect(parsePercent("100")).toBe(1_000_000_000);
    expect(parsePercent("100.0")).toBe(1_000_000_000);
  });

  it("refuse a health score out of range or not a number", () => {
    expect(buildAdmission(form({ minHealth: "101" })).errors?.minHealth).toBe("must be a percentage from 0 to 100");
    expect(buildAdmission(form({ minHealth: "100.0000001" })).errors?.minHealth).toBe("must be a percentage from 0 to 100");
    expect(buildAdmission(form({ minHealth: "-5" })).errors?.minHealth).toBe("must be a percentage from 0 to 100");
    expect(buildAdmission(form({ minHealth: "" })).errors?.minHealth).toBeDefined();
    expect(buildAdmission(form({ minHealth: "abc" })).errors?.minHealth).toBeDefined();
    expect(buildAdmission(form({ minHealth: "0.00000001" })).errors?.minHealth).toBe("at most 7 decimals");
  });

  it("take the minimum age as a u32 number of blocks", () => {
    expect(buildAdmission(form({ minAge: "600" })).admission?.min_age).toBe(600);
    expect(buildAdmission(form({ minAge: "1.5" })).errors?.minAge).toBe("must be a whole number of blocks");
    expect(buildAdmission(form({ minAge: "-1" })).errors?.minAge).toBeDefined();
    expect(buildAdmission(form({ minAge: "4294967296" })).errors?.minAge).toMatch(/at most 4294967295/);
  });

  it("read the allowlist one address per line, trimmed, blank lines skipped", () => {
    const built = buildAdmission(form({ minHealth: "50", minAge: "10", allowlist: `${ALICE}\n\n  ${BOB}\r\n${CHARLIE}\n` }));
    expect(built).toEqual({ admission: { min_health: 500_000_000, min_age: 10, allowlist: [ALICE, BOB, CHARLIE] } });
    // Any network prefix names the account; the chain stores the key.
    expect(ALICE_POLKADOT).toBe("15oF4uVJwmo4TdGW7VfQxNLavjCXviqxT9S1MgbjMNHr6Sp5");
    expect(parseAllowlist(ALICE_POLKADOT)).toEqual([ALICE_POLKADOT]);
  });

  it("name the bad allowlist entry and its line", () => {
    const bad = (text: string) => buildAdmission(form({ allowlist: text })).errors?.allowlist;
    expect(bad(`${ALICE}\nbob`)).toBe('line 2 ("bob") is not an SS58 account address');
    // A changed character breaks the checksum.
    expect(bad(`${ALICE.slice(0, -1)}Z`)).toBe(`line 1 ("${ALICE.slice(0, 20)}…") is not an SS58 account address`);
    // Hex public keys are not addresses.
    expect(bad(`0x${"d4".repeat(32)}`)).toMatch(/^line 1 .* is not an SS58 account address$/);
    expect(bad(`x\n${ALICE}\ny\nz`)).toBe('line 1 ("x") is not an SS58 account address (and 2 more)');
    expect(bad(`${ALICE}\n${BOB}\n${ALICE_POLKADOT}`)).toBe("line 3 names the account of line 1 again");
  });

  it("refuse more than 64 accounts", () => {
    expect(MAX_ALLOWLIST).toBe(64);
    // 65 distinct valid addresses: the same keys under different prefixes would be duplicates,
    // so derive them from distinct public keys.
    const many = Array.from({ length: 65 }, (_, i) => ss58(i + 1));
    expect(parseAllowlist(many.slice(0, 64).join("\n"))).toHaveLength(64);
    expect(buildAdmission(form({ allowlist: many.join("\n") })).errors?.allowlist).toBe("at most 64 accounts (65 given)");
  });

  it("reports every field's problem at once", () => {
    expect(buildAdmission({ minHealth: "200", minAge: "x", allowlist: "nope" }).errors).toEqual({
      minHealth: "must be a percentage from 0 to 100",
      minAge: "must be a whole number of blocks",
      allowlist: 'line 1 ("nope") is not an SS58 account address',
    });
  });
});

describe("admission rules in words", () => {
  it("say anyone with the stake for the default", () => {
    expect(describeAdmission(OPEN_ADMISSION)).toEqual([]);
    expect(admissionText(OPEN_ADMISSION)).toBe("anyone with the stake");
  });

  it("list each rule", () => {
    expect(admissionText({ min_health: 800_000_000, min_age: 600, allowlist: [ALICE, BOB] })).toBe(
      "providers with the stake, a health score of at least 0.800 (80%), registered for at least 600 blocks (60 min), on the allowlist (2 accounts)",
    );
    expect(describeAdmission({ min_health: 125_000_000, min_age: 0, allowlist: [] })).toEqual([
      "a health score of at least 0.125 (12.5%)",
    ]);
    expect(describeAdmission({ min_health: 0, min_age: 1, allowlist: [ALICE] })).toEqual([
      "registered for at least 1 block (6 s)",
      "on the allowlist (1 account)",
    ]);
  });
});

/** A valid generic-prefix address of the 32-byte key whose every byte is `n`. */
function ss58(n: number): string {
  return AccountId(42).dec(new Uint8Array(32).fill(n));
}
