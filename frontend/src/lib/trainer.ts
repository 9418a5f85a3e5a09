// What a provider's trainer reports about itself at `/status` on its registered endpoint (the
// trainer's status server, `trainer/src/status_server.rs`, which answers with
// `access-control-allow-origin: *` so a page on another origin can read it), and how peer ids
// on chain (the libp2p identity's bytes) become the base58 text trainers report.

/** One peer as a trainer sees it (`trainer/src/round/peers.rs` `HealthRow`, its raw fields inlined). */
export interface TrainerPeer {
  /** Base58 peer id ("12D3KooW…"). */
  peer: string;
  score: number;
  rtt_ms?: number | null;
  throughput_mbit?: number | null;
  samples_per_sec?: number | null;
  fetch_ok?: number;
  fetch_failed?: number;
  accepted?: number;
  rejected?: number;
}

/** One round's losses (`trainer/src/daemon/reports.rs` `LossPoint`), oldest first in `history`. */
export interface LossPoint {
  round: number;
  unix_ms: number;
  train_loss?: number | null;
  eval_loss?: number | null;
}

/** The fields of `/status` the UI reads; trainers send more. */
export interface TrainerStatus {
  name: string;
  /** Base58 peer id. */
  peer_id: string;
  job: number;
  /** Round its state is the base of; absent before it synced. */
  round?: number | null;
  synced: boolean;
  model_hash?: string | null;
  last_eval_loss?: number | null;
  last_train_loss?: number | null;
  rounds_contributed: number;
  utilization: number;
  median_rtt_ms?: number | null;
  peers: TrainerPeer[];
  /** The latest rounds' losses (trainers before this field was added send none). */
  history?: LossPoint[];
  finished: boolean;
}

/** `/status` on the same host as a registered endpoint (which names `/health`). */
export function statusUrl(endpoint: string): string | undefined {
  try {
    const url = new URL(endpoint);
    if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
    return `${url.origin}/status`;
  } catch {
    return undefined;
  }
}

/** Why a trainer's status could not be read, for the page to say. */
export class TrainerUnreachable extends Error {}

/** Checks that `value` has the fields the UI reads, so a wrong server gives a clear error. */
export function parseStatus(value: unknown): TrainerStatus {
  const v = value as Partial<TrainerStatus> | null;
  if (!v || typeof v !== "object") throw new TrainerUnreachable("the status is not a JSON object");
  if (typeof v.peer_id !== "string") throw new TrainerUnreachable("the status has no peer_id");
  if (!Array.isArray(v.peers)) throw new TrainerUnreachable("the status has no peers list");
  if (v.history !== undefined && !Array.isArray(v.history)) throw new TrainerUnreachable("history is not a list");
  return v as TrainerStatus;
}

/** Reads a trainer's `/status` from its registered endpoint, giving up after `timeoutMs`. */
export async function fetchTrainerStatus(endpoint: string, timeoutMs = 3000): Promise<TrainerStatus> {
  const url = statusUrl(endpoint);
  if (!url) throw new TrainerUnreachable(`the endpoint ${JSON.stringify(endpoint)} is not an http(s) URL`);
  let response: Response;
  try {
    response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  } catch (e) {
    throw new TrainerUnreachable(`${url}: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (!response.ok) throw new TrainerUnreachable(`${url}: HTTP ${response.status}`);
  try {
    return parseStatus(await response.json());
  } catch (e) {
    throw e instanceof TrainerUnreachable ? new TrainerUnreachable(`${url}: ${e.message}`) : new TrainerUnreachable(`${url}: not JSON`);
  }
}

const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/** Bitcoin base58 of `bytes`: how libp2p writes peer ids. */
export function base58(bytes: Uint8Array): string {
  const digits: number[] = [];
  for (const byte of bytes) {
    let carry = byte;
    for (let i = 0; i < digits.length; i++) {
      carry += digits[i] << 8;
      digits[i] = carry % 58;
      carry = Math.floor(carry / 58);
    }
    while (carry > 0) {
      digits.push(carry % 58);
      carry = Math.floor(carry / 58);
    }
  }
  let zeros = 0;
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++;
  return "1".repeat(zeros) + digits.reverse().map((d) => ALPHABET[d]).join("");
}

/** A peer id as the chain keeps it (hex of its bytes) in base58, as trainers report it. */
export function peerIdText(hex: string): string {
  const clean = hex.startsWith("0x") ? hex.slice(2) : hex;
  if (clean.length % 2 !== 0 || /[^0-9a-f]/i.test(clean)) return hex;
  const bytes = new Uint8Array(clean.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(clean.slice(2 * i, 2 * i + 2), 16);
  return base58(bytes);
}
