import { describe, expect, it } from "vitest";
import { formatGrid, formatPerbill, parseGrid, perbillMulCeil, toNanos, UNIT } from "./units";

describe("GRID amounts", () => {
  it("parses decimals exactly into 12-decimal units", () => {
    expect(parseGrid("10.5")).toBe(10n * UNIT + UNIT / 2n);
    expect(parseGrid("100")).toBe(100n * UNIT);
    expect(parseGrid(" 0.000000000001 ")).toBe(1n);
    expect(parseGrid(".5")).toBe(UNIT / 2n);
    expect(parseGrid("123456789.123456789012")).toBe(123456789123456789012n);
  });

  it("refuses what is not an amount", () => {
    for (const bad of ["", "-3", "1e3", "abc", ".", "1.2.3"]) expect(typeof parseGrid(bad)).toBe("string");
    expect(parseGrid("0.0000000000001")).toBe("at most 12 decimals");
  });

  it("formats units as GRID", () => {
    expect(formatGrid(151_500_000_000_000n)).toBe("151.5 GRID");
    expect(formatGrid(1n)).toBe("0.000000000001 GRID");
    expect(formatGrid(1_234_567n * UNIT, false)).toBe("1,234,567");
    expect(formatGrid(0n)).toBe("0 GRID");
  });
});

describe("fixed point", () => {
  it("turns fractions into billionths like the trainer's job file", () => {
    expect(toNanos(0.003)).toBe(3_000_000);
    expect(toNanos(0.7)).toBe(700_000_000);
    expect(toNanos(4.29)).toBe(4_290_000_000);
    expect(typeof toNanos(-1)).toBe("string");
    expect(typeof toNanos(4.3)).toBe("string");
    expect(typeof toNanos(Number.NaN)).toBe("string");
  });

  it("rounds Perbill products up, as the pallet's escrow does", () => {
    expect(perbillMulCeil(10_000_000, 30n * UNIT)).toBe(3n * UNIT / 10n);
    expect(perbillMulCeil(10_000_000, 1n)).toBe(1n);
    expect(perbillMulCeil(0, 5n)).toBe(0n);
    expect(formatPerbill(10_000_000)).toBe("1%");
  });
});
