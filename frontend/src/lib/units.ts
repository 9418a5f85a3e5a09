// GRID amounts and fixed-point fractions as the chain stores them
// (grid_primitives::currency and grid_primitives::job::Nanos).

/** Decimal places of the native token (`grid_primitives::currency::DECIMALS`). */
export const DECIMALS = 12;
/** One GRID in the chain's smallest units. */
export const UNIT = 10n ** BigInt(DECIMALS);
/** Token symbol. */
export const SYMBOL = "GRID";
/** `Nanos::ONE`: fractions travel in billionths. */
export const NANOS_ONE = 1_000_000_000;
const U32_MAX = 0xffff_ffff;

/**
 * Parses a decimal GRID amount ("10", "10.5", "0.000000000001") into units, exactly (no
 * floating point). Returns an error message for anything that is not a non-negative decimal
 * with at most 12 fractional digits.
 */
export function parseGrid(text: string): bigint | string {
  const t = text.trim();
  const m = /^(\d*)(?:\.(\d*))?$/.exec(t);
  if (!t || !m || (m[1] === "" && !m[2])) return "must be a non-negative number of GRID";
  const [, whole = "", frac = ""] = m;
  if (frac.length > DECIMALS) return `at most ${DECIMALS} decimals`;
  return BigInt(whole || "0") * UNIT + BigInt(frac.padEnd(DECIMALS, "0") || "0");
}

/** Formats units as GRID, trimming trailing zeros: 10500000000000n → "10.5 GRID". */
export function formatGrid(units: bigint, withSymbol = true): string {
  const negative = units < 0n;
  const abs = negative ? -units : units;
  const whole = abs / UNIT;
  const frac = (abs % UNIT).toString().padStart(DECIMALS, "0").replace(/0+$/, "");
  const grouped = whole.toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  const text = `${negative ? "-" : ""}${grouped}${frac ? `.${frac}` : ""}`;
  return withSymbol ? `${text} ${SYMBOL}` : text;
}

/**
 * A fraction as the chain's fixed point (billionths), as the trainer's job file does it:
 * `round(x × 1e9)`, refusing values that are negative, not finite or above u32.
 */
export function toNanos(x: number): number | string {
  const n = Math.round(x * NANOS_ONE);
  if (!Number.isFinite(x) || x < 0 || n > U32_MAX) return `${x} is outside [0, 4.29]`;
  return n;
}

/** Billionths back to a number. */
export function fromNanos(n: number): number {
  return n / NANOS_ONE;
}

/** `Perbill::mul_ceil`: `ceil(amount × parts / 1e9)`. */
export function perbillMulCeil(parts: number, amount: bigint): bigint {
  const num = amount * BigInt(parts);
  const den = BigInt(NANOS_ONE);
  return (num + den - 1n) / den;
}

/** A Perbill as a percentage string: 10_000_000 → "1%". */
export function formatPerbill(parts: number): string {
  return `${Number(((parts / NANOS_ONE) * 100).toPrecision(6))}%`;
}
