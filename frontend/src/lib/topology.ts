// The network as the trainers see it: each registered provider's trainer reports, at `/status`
// on its endpoint, the peers it exchanges with (round-trip time, throughput, its health score
// for them). This reads those reports and shapes them into a latency matrix (a row per
// reporting trainer, a column per reported peer) and an undirected graph, with peers mapped to
// provider accounts through their on-chain peer ids.
import { shortAddress } from "./format";
import type { ProviderRow } from "./providers";
import type { TrainerSource } from "./source";
import { peerIdText, type TrainerPeer, type TrainerStatus } from "./trainer";

/** One provider's trainer, as last read: its status, or why it could not be read. */
export interface TrainerReport {
  who: string;
  endpoint: string;
  status?: TrainerStatus;
  error?: string;
}

/** Reads every provider's trainer at once, in the providers' order; failures become reasons. */
export async function readTrainers(source: TrainerSource, providers: Pick<ProviderRow, "who" | "endpoint">[]): Promise<TrainerReport[]> {
  const results = await Promise.allSettled(providers.map((p) => source.status(p.endpoint)));
  return providers.map((p, i) => {
    const r = results[i]!;
    return r.status === "fulfilled"
      ? { who: p.who, endpoint: p.endpoint, status: r.value }
      : { who: p.who, endpoint: p.endpoint, error: r.reason instanceof Error ? r.reason.message : String(r.reason) };
  });
}

/** "12D3Ko…Xy9Zab": a base58 peer id shortened. */
export function shortPeer(peer: string): string {
  return peer.length > 16 ? `${peer.slice(0, 6)}…${peer.slice(-6)}` : peer;
}

/** Base58 peer id → provider account, from the providers' on-chain peer ids. */
export function peerOwners(providers: Pick<ProviderRow, "who" | "peerId">[]): Map<string, string> {
  return new Map(providers.map((p) => [peerIdText(p.peerId), p.who]));
}

/** A peer some trainer reports: a provider's account when its peer id is registered. */
export interface PeerColumn {
  peer: string;
  who?: string;
  /** Short account, or short peer id for a peer no provider registered. */
  label: string;
}

export interface LatencyRow {
  who: string;
  label: string;
  /** The trainer's own peer id. */
  peer: string;
  /** One per column: what this trainer reports about that peer, if anything. */
  cells: (TrainerPeer | undefined)[];
}

export interface LatencyMatrix {
  rows: LatencyRow[];
  columns: PeerColumn[];
}

const columnOf = (peer: string, owners: Map<string, string>): PeerColumn => {
  const who = owners.get(peer);
  return who ? { peer, who, label: shortAddress(who) } : { peer, label: shortPeer(peer) };
};

/**
 * The matrix: a row per trainer that answered (in the providers' order), a column per peer any
 * of them reports: registered providers first (in the providers' order), then unknown peers by
 * peer id.
 */
export function latencyMatrix(providers: Pick<ProviderRow, "who" | "peerId">[], reports: TrainerReport[]): LatencyMatrix {
  const owners = peerOwners(providers);
  const order = new Map(providers.map((p, i) => [p.who, i]));
  const answered = reports.filter((r): r is TrainerReport & { status: TrainerStatus } => !!r.status);
  const peers = new Set<string>();
  for (const r of answered) for (const p of r.status.peers) if (p.peer !== r.status.peer_id) peers.add(p.peer);
  const columns = [...peers].map((peer) => columnOf(peer, owners));
  const rank = (c: PeerColumn) => (c.who !== undefined ? (order.get(c.who) ?? Infinity) : Infinity);
  columns.sort((a, b) => rank(a) - rank(b) || (a.peer < b.peer ? -1 : a.peer > b.peer ? 1 : 0));
  const rows = answered.map((r) => {
    const byPeer = new Map(r.status.peers.map((p) => [p.peer, p]));
    return {
      who: r.who,
      label: shortAddress(r.who),
      peer: r.status.peer_id,
      cells: columns.map((c) => (c.peer === r.status.peer_id ? undefined : byPeer.get(c.peer))),
    };
  });
  return { rows, columns };
}

/** Reachable (coloured by its chain health score), unreachable, not read yet, or not a provider. */
export type NodeState = "good" | "fair" | "poor" | "unreachable" | "pending" | "unknown";

export interface TopologyNode {
  /** The provider's account, or the peer id of a peer no provider registered. */
  id: string;
  who?: string;
  peer: string;
  label: string;
  state: NodeState;
  /** Chain health score (Perbill parts), for providers. */
  score?: number;
  /** Why its trainer could not be read. */
  error?: string;
}

export interface TopologyEdge {
  /** Node ids, `a < b`. */
  a: string;
  b: string;
  /** Mean of the round-trip times the two ends report, when any does. */
  rttMs?: number;
  /** Mean of the throughputs the two ends report, Mbit/s. */
  throughputMbit?: number;
  /** 1 when one end reports the other, 2 when both do. */
  reports: number;
}

export interface Topology {
  nodes: TopologyNode[];
  edges: TopologyEdge[];
}

/** A chain health score's level, as the score bars colour it. */
export function scoreLevel(parts: number): "good" | "fair" | "poor" {
  const f = parts / 1e9;
  return f >= 0.8 ? "good" : f >= 0.5 ? "fair" : "poor";
}

const mean = (xs: number[]) => (xs.length === 0 ? undefined : xs.reduce((s, x) => s + x, 0) / xs.length);
const finite = (x: number | null | undefined): x is number => typeof x === "number" && Number.isFinite(x);

/**
 * Nodes: every provider (in order), then the unknown peers trainers report; an undirected edge
 * for each pair where at least one end reports the other, the two reports merged.
 */
export function topology(
  providers: Pick<ProviderRow, "who" | "peerId" | "score">[],
  reports: TrainerReport[],
): Topology {
  const owners = peerOwners(providers);
  const byWho = new Map(reports.map((r) => [r.who, r]));
  const nodes: TopologyNode[] = providers.map((p) => {
    const r = byWho.get(p.who);
    const state: NodeState = r?.status ? scoreLevel(p.score) : r?.error !== undefined ? "unreachable" : "pending";
    return { id: p.who, who: p.who, peer: peerIdText(p.peerId), label: shortAddress(p.who), state, score: p.score, error: r?.error };
  });
  const known = new Set(nodes.map((n) => n.id));
  const pairs = new Map<string, { a: string; b: string; rtts: number[]; throughputs: number[]; reporters: Set<string> }>();
  for (const r of reports) {
    if (!r.status || !known.has(r.who)) continue;
    for (const p of r.status.peers) {
      if (p.peer === r.status.peer_id) continue;
      const other = owners.get(p.peer) ?? p.peer;
      if (other === r.who) continue;
      if (!known.has(other)) {
        known.add(other);
        nodes.push({ id: other, peer: p.peer, label: shortPeer(p.peer), state: "unknown" });
      }
      const [a, b] = r.who < other ? [r.who, other] : [other, r.who];
      const key = `${a}|${b}`;
      const pair = pairs.get(key) ?? { a, b, rtts: [], throughputs: [], reporters: new Set<string>() };
      if (finite(p.rtt_ms)) pair.rtts.push(p.rtt_ms);
      if (finite(p.throughput_mbit)) pair.throughputs.push(p.throughput_mbit);
      pair.reporters.add(r.who);
      pairs.set(key, pair);
    }
  }
  const edges = [...pairs.values()].map(({ a, b, rtts, throughputs, reporters }) => ({
    a,
    b,
    rttMs: mean(rtts),
    throughputMbit: mean(throughputs),
    reports: reporters.size,
  }));
  return { nodes, edges };
}

/** `n` points on a circle of radius `r` around (cx, cy), the first at the top, clockwise. */
export function circleLayout(n: number, cx: number, cy: number, r: number): { x: number; y: number }[] {
  return Array.from({ length: n }, (_, i) => {
    const angle = -Math.PI / 2 + (2 * Math.PI * i) / Math.max(n, 1);
    return { x: Math.round((cx + r * Math.cos(angle)) * 10) / 10, y: Math.round((cy + r * Math.sin(angle)) * 10) / 10 };
  });
}

/** Stroke width of an edge: 1 px, up to 7 px for the highest throughput seen. */
export function edgeWidth(throughputMbit: number | undefined, maxThroughput: number): number {
  if (throughputMbit === undefined || maxThroughput <= 0) return 1;
  return Math.round((1 + 6 * Math.min(throughputMbit / maxThroughput, 1)) * 10) / 10;
}

/** Upper bounds (ms) of the heat-map's colour bands; the last band is everything above. */
export const RTT_BANDS = [10, 50, 100, 250] as const;

/** The colour band of a round-trip time: 0 (fastest) … 4 (slowest), undefined when not measured. */
export function rttBand(ms: number | null | undefined): number | undefined {
  if (!finite(ms)) return undefined;
  const i = RTT_BANDS.findIndex((bound) => ms < bound);
  return i === -1 ? RTT_BANDS.length : i;
}

/** The bands' labels, for the legend. */
export function rttBandLabels(): string[] {
  return [
    `< ${RTT_BANDS[0]} ms`,
    ...RTT_BANDS.slice(1).map((bound, i) => `${RTT_BANDS[i]}–${bound} ms`),
    `≥ ${RTT_BANDS[RTT_BANDS.length - 1]} ms`,
  ];
}

/** 3.25 → "3.3 ms", 42.4 → "42 ms". */
export function formatRtt(ms: number | null | undefined): string {
  if (!finite(ms)) return "—";
  return ms < 10 ? `${ms.toFixed(1)} ms` : `${Math.round(ms)} ms`;
}

/** 85.26 → "85.3 Mbit/s". */
export function formatMbit(mbit: number | null | undefined): string {
  if (!finite(mbit)) return "—";
  return `${Number(mbit.toPrecision(3))} Mbit/s`;
}
