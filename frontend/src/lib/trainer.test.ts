import { afterEach, describe, expect, it, vi } from "vitest";
import { base58, fetchTrainerStatus, parseStatus, peerIdText, statusUrl, TrainerUnreachable } from "./trainer";

// `grid-trainer peer-id --key-seed 7` and the 38 bytes the chain keeps for it.
const PEER = "12D3KooWQkRoWiUVSDcRc2uttGoL6yw2UA6z2kWsAHc9jaB9Uuw2";
const PEER_HEX = "0x002408011220dddd16ee27e8ee7f840f466ce3a3113d37524b69d16708eb749e580444765fc5";

describe("peer ids", () => {
  it("writes the chain's bytes as the base58 the trainer reports", () => {
    expect(peerIdText(PEER_HEX)).toBe(PEER);
  });
  it("keeps leading zero bytes as 1s and leaves non-hex alone", () => {
    expect(base58(new Uint8Array([0, 0, 1]))).toBe("112");
    expect(peerIdText("not hex")).toBe("not hex");
  });
});

describe("status URLs", () => {
  it("asks the endpoint's host for /status", () => {
    expect(statusUrl("http://127.0.0.1:4000/health")).toBe("http://127.0.0.1:4000/status");
    expect(statusUrl("https://gpu.example:8443/health?x=1")).toBe("https://gpu.example:8443/status");
  });
  it("refuses what is not an http(s) URL", () => {
    expect(statusUrl("127.0.0.1:4000")).toBeUndefined();
    expect(statusUrl("ftp://host/health")).toBeUndefined();
  });
});

describe("reading a trainer's status", () => {
  afterEach(() => vi.unstubAllGlobals());

  it("checks the fields the UI reads", () => {
    expect(() => parseStatus(null)).toThrow(/not a JSON object/);
    expect(() => parseStatus({ peers: [] })).toThrow(/no peer_id/);
    expect(() => parseStatus({ peer_id: PEER })).toThrow(/no peers/);
    expect(() => parseStatus({ peer_id: PEER, peers: [], history: 3 })).toThrow(/history/);
    expect(parseStatus({ peer_id: PEER, peers: [] }).peer_id).toBe(PEER);
  });

  it("says which URL failed and why", async () => {
    vi.stubGlobal("fetch", vi.fn(async () => new Response("nope", { status: 404 })));
    await expect(fetchTrainerStatus("http://127.0.0.1:9/health")).rejects.toThrow("http://127.0.0.1:9/status: HTTP 404");
    vi.stubGlobal("fetch", vi.fn(async () => new Response("<html>", { status: 200 })));
    await expect(fetchTrainerStatus("http://127.0.0.1:9/health")).rejects.toThrow(/not JSON/);
    vi.stubGlobal("fetch", vi.fn(async () => { throw new TypeError("Failed to fetch"); }));
    await expect(fetchTrainerStatus("http://127.0.0.1:9/health")).rejects.toBeInstanceOf(TrainerUnreachable);
    await expect(fetchTrainerStatus("nonsense")).rejects.toThrow(/not an http/);
  });

  it("returns the parsed status", async () => {
    const body = { peer_id: PEER, peers: [{ peer: "x", score: 1, rtt_ms: 2 }], history: [{ round: 0, unix_ms: 1, eval_loss: 2.5 }] };
    vi.stubGlobal("fetch", vi.fn(async () => new Response(JSON.stringify(body))));
    const status = await fetchTrainerStatus("http://127.0.0.1:9/health");
    expect(status.history?.[0].eval_loss).toBe(2.5);
    expect(status.peers[0].rtt_ms).toBe(2);
  });
});
