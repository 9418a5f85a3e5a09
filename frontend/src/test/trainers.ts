// Providers with distinct peer ids and what their trainers report, for the network view's tests.
import type { ProviderRow } from "../lib/providers";
import { peerIdText, type TrainerPeer, type TrainerStatus } from "../lib/trainer";
import { ALICE, BOB, CHARLIE, provider } from "./fixtures";

const hexOf = (byte: string) => `0x002408011220${byte.repeat(32)}`;
export const PEER_HEX = { [ALICE]: hexOf("a1"), [BOB]: hexOf("b2"), [CHARLIE]: hexOf("c3") };
export const PEER_OF = {
  [ALICE]: peerIdText(PEER_HEX[ALICE]!),
  [BOB]: peerIdText(PEER_HEX[BOB]!),
  [CHARLIE]: peerIdText(PEER_HEX[CHARLIE]!),
} as Record<string, string>;
/** A peer no provider registered. */
export const STRANGER = "12D3KooWStrangerPeerXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX";

/** Alice (score 1), Bob (0.6) and Charlie (0.3), each with its own peer id. */
export function networkProviders(): ProviderRow[] {
  return [
    provider(ALICE, { peerId: PEER_HEX[ALICE], endpoint: "http://10.0.0.1:8090/health" }),
    provider(BOB, { peerId: PEER_HEX[BOB], endpoint: "http://10.0.0.2:8090/health", score: 600_000_000 }),
    provider(CHARLIE, { peerId: PEER_HEX[CHARLIE], endpoint: "http://10.0.0.3:8090/health", score: 300_000_000 }),
  ];
}

export function peer(id: string, rtt: number | null, throughput: number | null = 100, score = 0.9): TrainerPeer {
  return { peer: id, score, rtt_ms: rtt, throughput_mbit: throughput };
}

export function trainerStatus(name: string, peerId: string, peers: TrainerPeer[]): TrainerStatus {
  return {
    name,
    peer_id: peerId,
    job: 3,
    round: 7,
    synced: true,
    rounds_contributed: 6,
    utilization: 0.8,
    median_rtt_ms: 12,
    peers,
    finished: false,
  };
}

/** Alice reports Bob (12 ms, 80 Mbit/s) and a stranger (300 ms); Bob reports Alice (14 ms, 120 Mbit/s); Charlie is down. */
export function networkStatuses(): Record<string, TrainerStatus> {
  return {
    "http://10.0.0.1:8090/health": trainerStatus("alice", PEER_OF[ALICE]!, [
      peer(PEER_OF[BOB]!, 12, 80),
      peer(STRANGER, 300, null, 0.2),
    ]),
    "http://10.0.0.2:8090/health": trainerStatus("bob", PEER_OF[BOB]!, [peer(PEER_OF[ALICE]!, 14, 120)]),
  };
}
