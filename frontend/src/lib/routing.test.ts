import { describe, expect, it } from "vitest";
import { parseRoute } from "../hooks/useHashRoute";
import { DEFAULT_RPC, isDevChain, rpcFromLocation } from "./chain";
import { fetchCommand, foldJobEvent, mergeRounds } from "./jobs";

describe("locations", () => {
  it("take the node from ?rpc=", () => {
    expect(rpcFromLocation("")).toBe(DEFAULT_RPC);
    expect(rpcFromLocation("?rpc=ws://10.0.0.2:9944")).toBe("ws://10.0.0.2:9944");
    expect(rpcFromLocation("?rpc=javascript:alert(1)")).toBe(DEFAULT_RPC);
  });

  it("route by hash", () => {
    expect(parseRoute("")).toEqual({ page: "jobs" });
    expect(parseRoute("#/jobs/12")).toEqual({ page: "job", id: 12n });
    expect(parseRoute("#/create")).toEqual({ page: "create" });
    expect(parseRoute("#/network")).toEqual({ page: "network" });
    expect(parseRoute("#/providers/register")).toEqual({ page: "register" });
    expect(parseRoute("#/nope")).toEqual({ page: "missing", path: "/nope" });
  });

  it("offer dev accounts on dev and local chains only", () => {
    expect(isDevChain({ name: "Development", chainType: "Development" })).toBe(true);
    expect(isDevChain({ name: "Grid Local Testnet", chainType: "Local" })).toBe(true);
    expect(isDevChain({ name: "Grid", chainType: "Live" })).toBe(false);
    expect(isDevChain({ name: "Development" })).toBe(true);
  });
});

describe("rounds", () => {
  it("fold events and merge them with rounds read from state", () => {
    let live = foldJobEvent([], { kind: "RewardPaid", block: 5, round: 1, who: "b", amount: 2n });
    live = foldJobEvent(live, { kind: "RoundSettled", block: 5, round: 1, paid: 2n, fee: 1n, refunded: 0n });
    expect(live).toEqual([{ round: 1, paid: 2n, fee: 1n, refunded: 0n, settledAt: 5, resultModelHash: undefined, rewards: [{ who: "b", amount: 2n }] }]);
    const state = [{ round: 0, paid: 1n, fee: 0n, refunded: 0n }, { round: 1, paid: 2n, fee: 1n, refunded: 0n, proofs: 2 }];
    const merged = mergeRounds(state, live);
    expect(merged.map((r) => r.round)).toEqual([0, 1]);
    expect(merged[1]).toMatchObject({ proofs: 2, rewards: [{ who: "b", amount: 2n }] });
    expect(fetchCommand("ws://n:9944", 3n)).toBe("grid-trainer job fetch --url ws://n:9944 --job 3 --out model.safetensors");
  });
});
