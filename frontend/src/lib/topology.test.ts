import { describe, expect, it, vi } from "vitest";
import { shortAddress } from "./format";
import { ALICE, BOB, CHARLIE } from "../test/fixtures";
import { networkProviders, networkStatuses, peer, PEER_OF, STRANGER, trainerStatus } from "../test/trainers";
import type { TrainerSource } from "./source";
import {
  circleLayout,
  edgeWidth,
  formatMbit,
  formatRtt,
  latencyMatrix,
  peerOwners,
  readTrainers,
  rttBand,
  rttBandLabels,
  shortPeer,
  topology,
  type TrainerReport,
} from "./topology";
import { TrainerUnreachable } from "./trainer";

const fakeTrainers = (): TrainerSource => {
  const statuses = networkStatuses();
  return {
    status: vi.fn(async (endpoint: string) => {
      const s = statuses[endpoint];
      if (!s) throw new TrainerUnreachable(`${endpoint.replace("/health", "/status")}: Failed to fetch`);
      return s;
    }),
  };
};

async function reports(): Promise<TrainerReport[]> {
  return readTrainers(fakeTrainers(), networkProviders());
}

describe("reading the trainers", () => {
  it("asks every provider's endpoint and keeps why one failed, in the providers' order", async () => {
    const source = fakeTrainers();
    const r = await readTrainers(source, networkProviders());
    expect(source.status).toHaveBeenCalledTimes(3);
    expect(r.map((x) => [x.who, x.status?.name, x.error])).toEqual([
      [ALICE, "alice", undefined],
      [BOB, "bob", undefined],
      [CHARLIE, undefined, "http://10.0.0.3:8090/status: Failed to fetch"],
    ]);
  });

  it("maps peer ids to providers", () => {
    const owners = peerOwners(networkProviders());
    expect(owners.get(PEER_OF[BOB])).toBe(BOB);
    expect(owners.get(STRANGER)).toBeUndefined();
    expect(shortPeer(STRANGER)).toBe("12D3Ko…XXXXXX");
    expect(shortPeer("short")).toBe("short");
  });
});

describe("the latency matrix", () => {
  it("has a row per answering trainer and a column per reported peer, providers first", async () => {
    const m = latencyMatrix(networkProviders(), await reports());
    expect(m.rows.map((r) => r.who)).toEqual([ALICE, BOB]);
    expect(m.columns).toEqual([
      { peer: PEER_OF[ALICE], who: ALICE, label: shortAddress(ALICE) },
      { peer: PEER_OF[BOB], who: BOB, label: shortAddress(BOB) },
      { peer: STRANGER, label: "12D3Ko…XXXXXX" },
    ]);
    expect(m.rows[0]!.cells.map((c) => c?.rtt_ms)).toEqual([undefined, 12, 300]);
    expect(m.rows[1]!.cells.map((c) => c?.rtt_ms)).toEqual([14, undefined, undefined]);
    expect(m.rows[0]!.peer).toBe(PEER_OF[ALICE]);
  });

  it("is empty when no trainer answers, and ignores a trainer reporting itself", () => {
    expect(latencyMatrix(networkProviders(), [{ who: ALICE, endpoint: "x", error: "down" }])).toEqual({ rows: [], columns: [] });
    const self = latencyMatrix(networkProviders(), [
      { who: ALICE, endpoint: "x", status: trainerStatus("a", PEER_OF[ALICE], [peer(PEER_OF[ALICE], 1)]) },
    ]);
    expect(self.columns).toEqual([]);
  });
});

describe("the topology", () => {
  it("has every provider, the unknown peers, and one undirected edge per reported pair", async () => {
    const t = topology(networkProviders(), await reports());
    expect(t.nodes.map((n) => [n.label, n.state])).toEqual([
      [shortAddress(ALICE), "good"],
      [shortAddress(BOB), "fair"],
      [shortAddress(CHARLIE), "unreachable"],
      ["12D3Ko…XXXXXX", "unknown"],
    ]);
    expect(t.nodes[2]!.error).toBe("http://10.0.0.3:8090/status: Failed to fetch");
    expect(t.nodes[0]!.peer).toBe(PEER_OF[ALICE]);
    const [a, b] = ALICE < BOB ? [ALICE, BOB] : [BOB, ALICE];
    expect(t.edges).toEqual([
      // Both report each other: the means.
      { a, b, rttMs: 13, throughputMbit: 100, reports: 2 },
      { a: ALICE < STRANGER ? ALICE : STRANGER, b: ALICE < STRANGER ? STRANGER : ALICE, rttMs: 300, throughputMbit: undefined, reports: 1 },
    ]);
  });

  it("marks providers not read yet as pending, colours answering ones by score", () => {
    const rows = networkProviders();
    const t = topology(rows, [
      { who: CHARLIE, endpoint: "x", status: trainerStatus("c", PEER_OF[CHARLIE], [peer(PEER_OF[ALICE], null, null)]) },
    ]);
    expect(t.nodes.map((n) => n.state)).toEqual(["pending", "pending", "poor"]);
    expect(t.edges).toEqual([
      { a: ALICE < CHARLIE ? ALICE : CHARLIE, b: ALICE < CHARLIE ? CHARLIE : ALICE, rttMs: undefined, throughputMbit: undefined, reports: 1 },
    ]);
  });
});

describe("drawing helpers", () => {
  it("lay nodes on a circle from the top, clockwise", () => {
    expect(circleLayout(4, 100, 100, 50)).toEqual([
      { x: 100, y: 50 },
      { x: 150, y: 100 },
      { x: 100, y: 150 },
      { x: 50, y: 100 },
    ]);
    expect(circleLayout(0, 0, 0, 1)).toEqual([]);
  });

  it("scale edges by throughput", () => {
    expect(edgeWidth(undefined, 100)).toBe(1);
    expect(edgeWidth(50, 0)).toBe(1);
    expect(edgeWidth(50, 100)).toBe(4);
    expect(edgeWidth(100, 100)).toBe(7);
  });

  it("band round-trip times and format them", () => {
    expect([0, 9.9, 10, 49, 50, 99, 100, 249, 250, 5000].map(rttBand)).toEqual([0, 0, 1, 1, 2, 2, 3, 3, 4, 4]);
    expect(rttBand(null)).toBeUndefined();
    expect(rttBand(undefined)).toBeUndefined();
    expect(rttBandLabels()).toEqual(["< 10 ms", "10–50 ms", "50–100 ms", "100–250 ms", "≥ 250 ms"]);
    expect(formatRtt(3.25)).toBe("3.3 ms");
    expect(formatRtt(42.4)).toBe("42 ms");
    expect(formatRtt(null)).toBe("—");
    expect(formatMbit(85.26)).toBe("85.3 Mbit/s");
    expect(formatMbit(undefined)).toBe("—");
  });
});
