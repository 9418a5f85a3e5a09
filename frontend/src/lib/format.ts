// Short forms for addresses and hashes; the full value goes in a title attribute.

/** "5GrwvaEF…oHGKutQY" */
export function shortAddress(address: string): string {
  return address.length > 16 ? `${address.slice(0, 8)}…${address.slice(-8)}` : address;
}

/** "0x1234abcd…9f8e7d6c" */
export function shortHash(hash: string): string {
  return hash.length > 22 ? `${hash.slice(0, 10)}…${hash.slice(-8)}` : hash;
}

/** Blocks as a duration at 6 s per block: 8 → "8 blocks (48 s)". */
export function blocksToText(blocks: number, msPerBlock = 6000): string {
  const s = (blocks * msPerBlock) / 1000;
  const time = s < 120 ? `${s} s` : s < 7200 ? `${Math.round(s / 60)} min` : `${(s / 3600).toFixed(1)} h`;
  return `${blocks} block${blocks === 1 ? "" : "s"} (${time})`;
}
