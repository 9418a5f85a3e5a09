// Helpers the tests against a real dev node share (not a test file itself).
import { createPrivateKey, generateKeyPairSync, sign } from "node:crypto";
import type { TxEvent } from "polkadot-api";
import { filter, firstValueFrom, type Observable } from "rxjs";
import { IDLE, nextTxState, type TxState } from "../src/lib/tx";

/** Follows a transaction until it is in a best block (or fails); the UI's state for it. */
export async function untilInBlock(tx$: Observable<TxEvent>): Promise<{ state: TxState; block: string }> {
  let state: TxState = IDLE;
  const ev = await firstValueFrom(
    tx$.pipe(
      filter((e) => {
        state = nextTxState(state, e);
        return (e.type === "txBestBlocksState" && e.found) || state.phase === "failed";
      }),
    ),
  );
  return { state, block: ev.type === "txBestBlocksState" && ev.found ? ev.block.hash : "best" };
}

/** `grid_primitives::provider::peer_binding_payload`: SCALE `(b"grid/peer-binding/v1", genesis, account)`. */
export function peerBindingPayload(genesis: Uint8Array, account: Uint8Array): Uint8Array {
  // Uint8Array.from: a TextEncoder's array from jsdom's realm fails PAPI's value check.
  const domain = Uint8Array.from(Buffer.from("grid/peer-binding/v1", "utf8"));
  // A byte slice encodes as its compact length (single-byte mode: len << 2) and the bytes.
  return new Uint8Array([domain.length << 2, ...domain, ...genesis, ...account]);
}

/** A fresh libp2p-style ed25519 key: its raw public key and a signer over raw bytes. */
export function ed25519Key() {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const raw = Buffer.from(publicKey.export({ format: "jwk" }).x!, "base64url");
  const key = createPrivateKey(privateKey.export({ format: "pem", type: "pkcs8" }));
  return { public: new Uint8Array(raw), sign: (m: Uint8Array) => new Uint8Array(sign(null, m, key)) };
}

/**
 * Polls `read` every `interval` ms until `ok` holds for what it returned, and returns that value;
 * fails after `timeout` ms naming `what` was awaited and the last value (or error) seen. The dev
 * node the tests share may have just started, and other test files act on it at the same time:
 * wait for the state an assertion is about, then assert it.
 */
export async function waitUntil<T>(
  read: () => T | Promise<T>,
  ok: (value: T) => boolean,
  { what, timeout = 60_000, interval = 500 }: { what: string; timeout?: number; interval?: number },
): Promise<T> {
  const end = Date.now() + timeout;
  let last = "nothing yet";
  for (;;) {
    // A read that never answers (a node still starting) must not outlast the deadline either.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("no answer before the deadline")), Math.max(0, end - Date.now()));
    });
    try {
      const value = await Promise.race([Promise.resolve().then(read), late]);
      if (ok(value)) return value;
      last = String(value);
    } catch (e) {
      last = `error: ${e instanceof Error ? e.message : String(e)}`;
    } finally {
      clearTimeout(timer);
    }
    if (Date.now() >= end) throw new Error(`timed out after ${timeout / 1000} s waiting for ${what} (last seen: ${last})`);
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
}
