// A bounded scan of past blocks' events (`System.Events`), newest first, for what happened
// before a page was opened. Nodes keep the state of recent blocks only (the default
// `--state-pruning` keeps 256), so the scan stops cleanly at the first block whose state is gone
// and says which range it covered. Block hashes come from the legacy RPC `chain_getBlockHash`
// and the events from `state_getStorage` at that hash, decoded with PAPI's typed codecs:
// PAPI's `query…getValue({ at })` only reads blocks its chainHead subscription pins.
import { grid } from "@polkadot-api/descriptors";
import { getTypedCodecs, type PolkadotClient } from "polkadot-api";
import { eventRowsOf, type ChainEventRow, type EventRecordLike } from "./events";

/** `twox128("System") ++ twox128("Events")`: the storage key of a block's events. */
export const SYSTEM_EVENTS_KEY = "0x26aa394eea5630e07c48ae0c9558cef780d41e5e16056765bc8461851072c9d7";

/** The two reads the scan needs; tests pass a fake. */
export interface HistoryRpc {
  /** The hash of block `n` of the chain, or undefined when there is none. */
  blockHash(n: number): Promise<string | undefined>;
  /** The events of the block with this hash; rejects when the node no longer has its state. */
  events(hash: string): Promise<readonly EventRecordLike[]>;
}

/** The most blocks one scan reads. */
export const MAX_SCAN_BLOCKS = 3000;
/** Blocks read at once. */
export const SCAN_PARALLEL = 4;

export interface ScanOptions {
  /** Oldest block wanted (e.g. the job's creation block). */
  from: number;
  /** Newest block wanted (e.g. the finalized block). */
  to: number;
  maxBlocks?: number;
  parallel?: number;
  /** Which events to keep (all by default). */
  keep?: (e: ChainEventRow) => boolean;
  signal?: AbortSignal;
}

export interface HistoryScan {
  /** The range asked for, after the `maxBlocks` bound. */
  requested: { from: number; to: number };
  /** Blocks read (newest `to` down to `from`); undefined when none could be. */
  covered?: { from: number; to: number };
  /** The newest block that could not be read (the scan stopped there), and why. */
  stoppedAt?: number;
  reason?: string;
  /** Whether the node said that block's state is pruned (not another failure). */
  pruned: boolean;
  /** Blocks before `requested.from` left out by the `maxBlocks` bound. */
  truncated: boolean;
  /** Kept events, oldest first. */
  events: ChainEventRow[];
}

/** Error texts of a node that no longer has a block's state. */
const PRUNED = /discarded|prun|not found|unknown block|missing|header for/i;

export function isPrunedError(message: string): boolean {
  return PRUNED.test(message);
}

const messageOf = (e: unknown) => (e instanceof Error ? e.message : typeof e === "string" ? e : JSON.stringify(e));

/**
 * Reads the events of blocks `to` down to `from` (at most `maxBlocks`, `parallel` at a time),
 * stopping at the first block whose hash or state cannot be read: every older block's state is
 * gone too on a pruning node. Never rejects; a failure is reported in the result.
 */
export async function scanHistory(rpc: HistoryRpc, options: ScanOptions): Promise<HistoryScan> {
  const { to, maxBlocks = MAX_SCAN_BLOCKS, parallel = SCAN_PARALLEL, keep = () => true, signal } = options;
  const from = Math.max(options.from, 0, to - maxBlocks + 1);
  const scan: HistoryScan = {
    requested: { from, to },
    pruned: false,
    truncated: from > Math.max(options.from, 0),
    events: [],
  };
  if (to < from) return scan;
  const batches: ChainEventRow[][] = [];
  let oldest: number | undefined;
  const read = async (n: number): Promise<ChainEventRow[]> => {
    const hash = await rpc.blockHash(n);
    if (!hash) throw new Error(`the node has no block #${n}`);
    return eventRowsOf(n, await rpc.events(hash)).filter(keep);
  };
  for (let top = to; top >= from; top -= parallel) {
    if (signal?.aborted) {
      scan.reason = "stopped";
      break;
    }
    const blocks: number[] = [];
    for (let n = top; n > top - parallel && n >= from; n--) blocks.push(n);
    const results = await Promise.allSettled(blocks.map(read));
    let failed = false;
    for (let i = 0; i < blocks.length; i++) {
      const r = results[i]!;
      if (r.status === "rejected") {
        scan.stoppedAt = blocks[i];
        scan.reason = messageOf(r.reason);
        scan.pruned = isPrunedError(scan.reason);
        failed = true;
        break;
      }
      batches.push(r.value);
      oldest = blocks[i];
    }
    if (failed) break;
  }
  if (oldest !== undefined) scan.covered = { from: oldest, to };
  scan.events = batches.reverse().flat();
  return scan;
}

/** What the page says about a scan's coverage. */
export function describeScan(scan: HistoryScan): string {
  const { covered, requested } = scan;
  if (!covered) {
    if (scan.pruned)
      return `No past events: the state of block #${scan.stoppedAt} is pruned by this node (an archive node, --state-pruning archive, keeps it all).`;
    return scan.reason ? `No past events could be read: ${scan.reason}.` : "No past blocks to read.";
  }
  let text = `Events from block #${covered.from} on`;
  if (covered.from > requested.from) {
    text += scan.pruned
      ? `; older state is pruned by this node (an archive node, --state-pruning archive, keeps it all).`
      : `; block #${scan.stoppedAt} could not be read${scan.reason ? ` (${scan.reason})` : ""}.`;
  } else if (scan.truncated) {
    text += ` (the scan reads the last ${requested.to - requested.from + 1} blocks at most).`;
  } else text += ".";
  return text;
}

/** The node's JSON-RPC through PAPI's client, decoding events with the runtime's codecs. */
export function chainHistoryRpc(client: PolkadotClient): HistoryRpc {
  let codecs: ReturnType<typeof getTypedCodecs<typeof grid>> | undefined;
  return {
    blockHash: async (n) => (await client._request<string | null>("chain_getBlockHash", [n])) ?? undefined,
    events: async (hash) => {
      codecs ??= getTypedCodecs(grid);
      const [hex, c] = await Promise.all([
        client._request<string | null>("state_getStorage", [SYSTEM_EVENTS_KEY, hash]),
        codecs,
      ]);
      return hex ? (c.query.System.Events.value.dec(hex) as readonly EventRecordLike[]) : [];
    },
  };
}
