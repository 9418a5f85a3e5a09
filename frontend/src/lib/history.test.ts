import { describe, expect, it, vi } from "vitest";
import type { EventRecordLike } from "./events";
import { describeScan, isPrunedError, scanHistory, type HistoryRpc } from "./history";

/** A node with blocks 0..head whose state is kept from `keptFrom` on; block n has one event per kind. */
function fakeRpc(head: number, keptFrom: number, failAt?: { block: number; message: string }) {
  const calls: number[] = [];
  const rpc: HistoryRpc = {
    blockHash: vi.fn(async (n: number) => (n <= head ? `0x${n.toString(16).padStart(4, "0")}` : undefined)),
    events: vi.fn(async (hash: string): Promise<EventRecordLike[]> => {
      const n = parseInt(hash.slice(2), 16);
      calls.push(n);
      if (failAt && n === failAt.block) throw new Error(failAt.message);
      if (n < keptFrom) throw new Error(`State already discarded for ${hash}`);
      return [
        { event: { type: "System", value: { type: "ExtrinsicSuccess", value: {} } } },
        { event: { type: "Jobs", value: { type: "Voted", value: { id: BigInt(n) } } } },
      ];
    }),
  };
  return { rpc, calls };
}

describe("scanHistory", () => {
  it("reads every block of the range when the node has their state, oldest first", async () => {
    const { rpc } = fakeRpc(100, 0);
    const scan = await scanHistory(rpc, { from: 90, to: 100, parallel: 3, keep: (e) => e.pallet === "Jobs" });
    expect(scan.covered).toEqual({ from: 90, to: 100 });
    expect(scan.stoppedAt).toBeUndefined();
    expect(scan.truncated).toBe(false);
    expect(scan.events.map((e) => e.block)).toEqual([90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100]);
    expect(scan.events[0]).toMatchObject({ pallet: "Jobs", name: "Voted", index: 1 });
    expect(describeScan(scan)).toBe("Events from block #90 on.");
  });

  it("stops at the first block whose state is pruned and says what it covered", async () => {
    const { rpc, calls } = fakeRpc(300, 45);
    const scan = await scanHistory(rpc, { from: 10, to: 60, parallel: 4 });
    expect(scan.covered).toEqual({ from: 45, to: 60 });
    expect(scan.stoppedAt).toBe(44);
    expect(scan.pruned).toBe(true);
    expect(scan.reason).toMatch(/State already discarded/);
    // Nothing older than the batch that hit the pruned block is asked for.
    expect(Math.min(...calls)).toBeGreaterThanOrEqual(41);
    expect(scan.events.every((e) => e.block >= 45)).toBe(true);
    expect(scan.events.filter((e) => e.pallet === "Jobs")).toHaveLength(16);
    expect(describeScan(scan)).toBe(
      "Events from block #45 on; older state is pruned by this node (an archive node, --state-pruning archive, keeps it all).",
    );
  });

  it("drops what a batch read beyond a pruned block (an older block answering is not trusted)", async () => {
    const { rpc } = fakeRpc(20, 0, { block: 18, message: "State already discarded" });
    const scan = await scanHistory(rpc, { from: 0, to: 20, parallel: 4 });
    expect(scan.covered).toEqual({ from: 19, to: 20 });
    expect(scan.events.map((e) => e.block)).toEqual([19, 19, 20, 20]);
  });

  it("reports another failure without calling it pruning", async () => {
    const { rpc } = fakeRpc(20, 0, { block: 20, message: "socket closed" });
    const scan = await scanHistory(rpc, { from: 0, to: 20 });
    expect(scan.covered).toBeUndefined();
    expect(scan.pruned).toBe(false);
    expect(describeScan(scan)).toBe("No past events could be read: socket closed.");
  });

  it("says when nothing could be read because everything is pruned", async () => {
    const { rpc } = fakeRpc(500, 450);
    const scan = await scanHistory(rpc, { from: 5, to: 400 });
    expect(scan.covered).toBeUndefined();
    expect(describeScan(scan)).toMatch(/^No past events: the state of block #400 is pruned by this node/);
  });

  it("reads at most maxBlocks, the newest", async () => {
    const { rpc } = fakeRpc(5000, 0);
    const scan = await scanHistory(rpc, { from: 0, to: 5000, maxBlocks: 10, keep: () => false });
    expect(scan.requested).toEqual({ from: 4991, to: 5000 });
    expect(scan.covered).toEqual({ from: 4991, to: 5000 });
    expect(scan.truncated).toBe(true);
    expect(scan.events).toEqual([]);
    expect(describeScan(scan)).toBe("Events from block #4991 on (the scan reads the last 10 blocks at most).");
  });

  it("stops when a block does not exist, and when aborted", async () => {
    const { rpc } = fakeRpc(10, 0);
    const missing = await scanHistory(rpc, { from: 5, to: 12 });
    expect(missing.covered).toBeUndefined();
    expect(missing.reason).toBe("the node has no block #12");
    const abort = new AbortController();
    abort.abort();
    const stopped = await scanHistory(rpc, { from: 0, to: 10, signal: abort.signal });
    expect(stopped.covered).toBeUndefined();
    expect(stopped.reason).toBe("stopped");
  });

  it("recognises a node's pruned-state errors", () => {
    expect(isPrunedError("State already discarded for BlockId::Hash(0x12)")).toBe(true);
    expect(isPrunedError("Unknown block")).toBe(true);
    expect(isPrunedError("connection refused")).toBe(false);
  });
});
