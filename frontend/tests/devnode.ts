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
