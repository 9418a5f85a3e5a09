// Against a real node (skipped unless GRID_RPC is set): the history scan reads past blocks'
// `System.Events` over the legacy RPC and decodes them with the runtime's codecs, stopping at
// the first block whose state the node pruned; the activity source's other reads answer.
//   GRID_RPC=ws://127.0.0.1:9944 npm run test:node
// With a node started with a small `--state-pruning` (e.g. 16) and run for more blocks than
// that, the scan's stop at pruned state is exercised too.
import { afterAll, describe, expect, it } from "vitest";
import { chainActivitySource } from "../src/lib/activity";
import { connect, type Connection } from "../src/lib/chain";
import { chainHistoryRpc, describeScan, scanHistory } from "../src/lib/history";
import { waitUntil } from "./devnode";

const rpc = process.env.GRID_RPC;

describe.skipIf(!rpc)("history scan against a dev node", () => {
  let conn: Connection;
  afterAll(() => conn?.disconnect());

  it("reads and decodes past blocks' events down to the first pruned one", { timeout: 120_000 }, async () => {
    conn = connect(rpc!, () => undefined);
    // The shared dev node may have just started: wait (up to 60 s) for it to finalize block #3.
    const finalized = await waitUntil(
      async () => (await conn.client.getFinalizedBlock()).number,
      (n) => n > 2,
      { what: "the dev node to finalize a block above #2", timeout: 60_000 },
    );
    expect(finalized).toBeGreaterThan(2);
    const scan = await scanHistory(chainHistoryRpc(conn.client), { from: 0, to: finalized });
    expect(scan.covered?.to).toBe(finalized);
    // Every block of a dev chain but the genesis has at least its timestamp inherent's ExtrinsicSuccess.
    const blocks = new Set(scan.events.map((e) => e.block));
    const first = Math.max(1, scan.covered!.from);
    expect(blocks.size).toBe(finalized - first + 1);
    expect(scan.events.some((e) => e.pallet === "System" && e.name === "ExtrinsicSuccess")).toBe(true);
    if (scan.covered!.from > 0) {
      // A pruning node: the scan stopped at the newest block without state, and says so.
      expect(scan.stoppedAt).toBe(scan.covered!.from - 1);
      expect(scan.pruned).toBe(true);
      expect(describeScan(scan)).toContain("older state is pruned by this node");
    } else expect(scan.stoppedAt).toBeUndefined();
    console.log(`history scan: ${describeScan(scan)} (${scan.events.length} events; stop reason: ${scan.reason ?? "none"})`);

    const activity = chainActivitySource(conn.api, conn.client);
    const best = (await conn.client.getBestBlocks())[0]!.hash;
    expect(await activity.roundProofs(999_999n, best)).toEqual([]);
    expect(await activity.challenges(999_999n, best)).toEqual({ open: [], challenged: [] });
    expect(await activity.providerRewards("5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY", best)).toEqual([]);
  });
});
