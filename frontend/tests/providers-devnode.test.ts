// Against a real node (skipped unless GRID_RPC is set): //Bob registers as a provider with a
// real ed25519 libp2p binding (as tests/src/calls.rs `register_call` does), the providers view
// the UI reads lists him with his stake, `bond_more` through the UI's provider source raises it,
// and an `unbond` of more than the stake fails with the decoded error.
//   GRID_RPC=ws://127.0.0.1:9944 npm run test:node
import { getSs58AddressInfo, type SizedHex } from "polkadot-api";
import { afterAll, describe, expect, it } from "vitest";
import { devAccounts } from "../src/lib/accounts";
import { chainInfo, connect, type Connection } from "../src/lib/chain";
import { loadProvider, loadProviders, providerConstants, validateStakeAmount } from "../src/lib/providers";
import { chainProviderSource } from "../src/lib/source";
import { UNIT } from "../src/lib/units";
import { ed25519Key, peerBindingPayload, untilInBlock } from "./devnode";

const rpc = process.env.GRID_RPC;

const hex = (bytes: Uint8Array) => `0x${Buffer.from(bytes).toString("hex")}`;
// Uint8Array.from: a TextEncoder's array from jsdom's realm fails PAPI's value check.
const bytes = (text: string) => Uint8Array.from(Buffer.from(text, "utf8"));
const unhex = (h: string) => new Uint8Array(Buffer.from(h.replace(/^0x/, ""), "hex"));

describe.skipIf(!rpc)("providers against a dev node", () => {
  let conn: Connection;
  afterAll(() => conn?.disconnect());

  it("registers //Bob, lists him, bonds more and refuses an unbond above the stake", { timeout: 180_000 }, async () => {
    conn = connect(rpc!, () => undefined);
    const info = await chainInfo(conn.client);
    const bob = devAccounts(info.ss58Format)[1]!;
    const source = chainProviderSource(conn.api);
    const { minStake } = await providerConstants(conn.api);
    expect(minStake).toBe(100n * UNIT);

    let existing = await loadProvider(conn.api, bob.address);
    if (!existing) {
      const key = ed25519Key();
      const account = getSs58AddressInfo(bob.address);
      if (!account.isValid) throw new Error("bad address");
      const signature = key.sign(peerBindingPayload(unhex(info.genesisHash), account.publicKey));
      const registered = await untilInBlock(
        conn.api.tx.Providers.register({
          stake: 200n * UNIT,
          capabilities: {
            device: { type: "Cpu", value: undefined },
            device_name: bytes("x86_64 2-core"),
            device_count: 1,
            memory_mib: 24_576,
            tflops_milli: 150,
            bandwidth_mbps: 1_000,
            region: bytes("local"),
          },
          peer_public: hex(key.public) as SizedHex<32>,
          peer_signature: hex(signature) as SizedHex<64>,
          multiaddrs: [bytes("/ip4/127.0.0.1/tcp/40333")],
          endpoint: bytes("http://127.0.0.1:8090"),
        }).signSubmitAndWatch(bob.signer),
      );
      expect(registered.state.phase).toBe("inBlock");
      existing = await loadProvider(conn.api, bob.address, registered.block);
      expect(existing?.stake).toBe(200n * UNIT);
    }
    const before = existing!.stake;

    // The list the Providers page renders.
    const listed = (await loadProviders(conn.api)).find((p) => p.who === bob.address);
    expect(listed).toMatchObject({
      stake: before,
      endpoint: "http://127.0.0.1:8090",
      multiaddrs: ["/ip4/127.0.0.1/tcp/40333"],
      capabilities: { device: "Cpu", deviceName: "x86_64 2-core", tflopsMilli: 150, region: "local" },
    });
    // A new provider starts at 1; validators' probes of the (unserved) endpoint then lower it.
    expect(listed!.score).toBeGreaterThan(0);
    expect(listed!.score).toBeLessThanOrEqual(1_000_000_000);
    if (listed!.health.probesFailed === 0 && listed!.health.roundsMissed === 0) expect(listed!.score).toBe(1_000_000_000);

    // bond_more, validated and sent as the page does.
    const free = await source.free(bob.address, "best");
    const amount = validateStakeAmount("5", "bond", { stake: before, minStake, free, activeJobs: 0 });
    expect(amount).toBe(5n * UNIT);
    const bonded = await untilInBlock(source.bondMore(amount as bigint, bob.signer));
    expect(bonded.state.phase).toBe("inBlock");
    expect((await source.provider(bob.address, bonded.block))?.stake).toBe(before + 5n * UNIT);

    // Unbonding more than the stake: the form refuses it, and so does the chain.
    const stake = before + 5n * UNIT;
    expect(validateStakeAmount(String(stake / UNIT + 1n), "unbond", { stake, minStake, activeJobs: 0 })).toBe(
      "more than the active stake",
    );
    const refused = await untilInBlock(source.unbond(stake + UNIT, bob.signer));
    expect(refused.state).toMatchObject({
      phase: "failed",
      error: "Providers.InsufficientBond: unbonding more than the active stake",
    });
    console.log(
      `Bob's stake ${before} → ${stake}; unbond of ${stake + UNIT} refused; score ${listed!.score}, probes ${listed!.health.probesOk} ok / ${listed!.health.probesFailed} failed`,
    );
  });
});
