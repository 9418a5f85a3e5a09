// Against a real node (skipped unless GRID_RPC is set): registering a provider the way the
// register page does (the pasted JSON checked by `parseRegistration`, the stake by
// `validateRegistrationStake`, sent through the UI's `RegistrationSource`), the providers view
// listing it with the peer id the JSON names, and `update` of its region through the update
// form's `buildUpdate`.
//   - //Ferdie, with the JSON the real CLI prints (`grid-trainer registration --config …`;
//     `GRID_TRAINER` overrides the binary; skipped with a message when it is missing or has no
//     `registration` command);
//   - //Eve, with the same JSON shape made here (a fresh ed25519 key from Node's `crypto`
//     signing the binding payload, as tests/providers-devnode.test.ts does), so the chain path
//     is covered whatever the trainer binary.
//   GRID_RPC=ws://127.0.0.1:9944 npm run test:node
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { getSs58AddressInfo } from "polkadot-api";
import { afterAll, describe, expect, it } from "vitest";
import { devAccounts, type Account } from "../src/lib/accounts";
import { chainInfo, connect, type ChainInfo, type Connection } from "../src/lib/chain";
import { loadProviders } from "../src/lib/providers";
import { buildUpdate, draftOf, ed25519PeerId, parseRegistration, validateRegistrationStake } from "../src/lib/registration";
import { chainRegistrationSource } from "../src/lib/source";
import { peerIdText } from "../src/lib/trainer";
import { formatGrid, UNIT } from "../src/lib/units";
import { ed25519Key, peerBindingPayload, untilInBlock } from "./devnode";

const rpc = process.env.GRID_RPC;
const trainer = process.env.GRID_TRAINER ?? join(homedir(), ".cache/grid-target/release/grid-trainer");

/** Why the CLI cannot be used here, or undefined when it can. */
function cliMissing(): string | undefined {
  if (!existsSync(trainer)) return `${trainer} not found (build grid-trainer or set GRID_TRAINER)`;
  const help = spawnSync(trainer, ["registration", "--help"], { encoding: "utf8" });
  if (help.status !== 0) return `${trainer} has no \`registration\` command (rebuild it): ${(help.stderr || help.stdout).trim().split("\n")[0]}`;
  return undefined;
}
const missing = rpc ? cliMissing() : undefined;
if (rpc && missing) console.warn(`register-devnode: skipping the CLI registration of //Ferdie: ${missing}`);

/** A free TCP port on 127.0.0.1, below the kernel's ephemeral range (32768 and up), from
 * which outgoing connections take their local ports: one found free there can be taken
 * before the process meant to listen on it binds it (grid_primitives::ports, the tests' rule). */
async function freePort(): Promise<number> {
  for (let tries = 0; tries < 200; tries++) {
    const port = 10000 + Math.floor(Math.random() * 22000);
    const free = await new Promise<boolean>((ok) => {
      const server = createServer();
      server.once("error", () => ok(false));
      server.listen(port, "127.0.0.1", () => server.close(() => ok(true)));
    });
    if (free) return port;
  }
  throw new Error("no free loopback port from 10000 to 31999");
}

/** The JSON `grid-trainer registration` prints, made here with a fresh ed25519 key. */
function nodeRegistration(info: ChainInfo, account: string, port: number): string {
  const key = ed25519Key();
  const who = getSs58AddressInfo(account);
  if (!who.isValid) throw new Error("bad address");
  const payload = peerBindingPayload(Buffer.from(info.genesisHash.slice(2), "hex"), who.publicKey);
  const publicHex = `0x${Buffer.from(key.public).toString("hex")}`;
  const peerId = ed25519PeerId(publicHex);
  return JSON.stringify({
    format: "grid/registration/v1",
    genesis: info.genesisHash,
    account,
    peer_id: peerId,
    peer_public: publicHex,
    peer_signature: `0x${Buffer.from(key.sign(payload)).toString("hex")}`,
    multiaddrs: [`/ip4/127.0.0.1/tcp/${port}/p2p/${peerId}`],
    endpoint: `http://127.0.0.1:${port + 1}/health`,
    stake_grid: 200,
    capabilities: {
      device: "Cpu",
      device_name: "x86_64 2-core",
      device_count: 1,
      memory_mib: 4096,
      tflops_milli: 120,
      bandwidth_mbps: 1000,
      region: "local",
    },
  });
}

/** The CLI's registration for //Ferdie, from a provider file in a temporary directory. */
async function cliRegistration(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "grid-register-"));
  try {
    const file = join(dir, "provider.toml");
    writeFileSync(
      file,
      [
        'name = "ferdie"',
        'data_dir = "ferdie"',
        `listen = "/ip4/127.0.0.1/tcp/${await freePort()}"`,
        "[chain]",
        `url = "${rpc}"`,
        'account = "//Ferdie"',
        "stake = 200",
        `endpoint = "http://127.0.0.1:${await freePort()}/health"`,
        "",
      ].join("\n"),
    );
    const out = spawnSync(trainer, ["registration", "--config", file], { encoding: "utf8", timeout: 120_000 });
    if (out.status !== 0) throw new Error(`grid-trainer registration failed (${out.status}): ${out.stderr}`);
    return out.stdout.slice(out.stdout.indexOf("{"));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** What the register page and the update form do, for `account` with the pasted `json`. */
async function registerAndUpdate(conn: Connection, info: ChainInfo, account: Account, json: string) {
  const source = chainRegistrationSource(conn.api);
  const { minStake } = await source.constants();
  const already = !!(await source.provider(account.address, "best"));
  const parsed = parseRegistration(json, { genesisHash: info.genesisHash, account: account.address, alreadyRegistered: already });
  if (already) {
    // A node this test ran against before: the page refuses, and the update still works.
    expect(parsed.errors).toEqual([`${account.address} is already a registered provider`]);
  } else {
    expect(parsed.errors).toEqual([]);
    const reg = parsed.registration!;
    const free = await source.free(account.address, "best");
    const stake = validateRegistrationStake(formatGrid(reg.stake, false).replace(/,/g, ""), { minStake, free });
    expect(stake).toBe(200n * UNIT);
    const registered = await untilInBlock(source.register(reg, stake as bigint, account.signer));
    expect(registered.state.phase).toBe("inBlock");
    // The providers list lists it with the peer id the JSON names.
    const listed = (await loadProviders(conn.api, registered.block)).find((p) => p.who === account.address);
    expect(listed).toBeDefined();
    expect(peerIdText(listed!.peerId)).toBe(reg.peerId);
    expect(listed).toMatchObject({ stake: 200n * UNIT, multiaddrs: reg.multiaddrs, endpoint: reg.endpoint, capabilities: reg.capabilities });
    console.log(`${account.name} registered as ${reg.peerId} at ${registered.block}; capabilities ${JSON.stringify(reg.capabilities)}`);
  }

  const before = (await source.provider(account.address, "best"))!;
  // A region this account has not had (a rerun on the same node must change something).
  const region = `eu-${account.name.toLowerCase()}-${Date.now().toString(36)}`;
  const result = buildUpdate({ ...draftOf(before), region }, before);
  expect(result.update).toEqual({ capabilities: { ...before.capabilities, region } });
  const updated = await untilInBlock(source.update(result.update!, account.signer));
  expect(updated.state.phase).toBe("inBlock");
  const after = await source.provider(account.address, updated.block);
  expect(after?.capabilities.region).toBe(region);
  expect(after?.multiaddrs).toEqual(before.multiaddrs);
}

describe.skipIf(!rpc)("registering a provider from the browser, against a dev node", () => {
  let conn: Connection;
  afterAll(() => conn?.disconnect());

  it.skipIf(!!missing)("registers //Ferdie with the JSON grid-trainer registration prints, then updates its region", { timeout: 240_000 }, async () => {
    const json = await cliRegistration();
    conn ??= connect(rpc!, () => undefined);
    const info = await chainInfo(conn.client);
    expect(JSON.parse(json)).toMatchObject({ format: "grid/registration/v1", genesis: info.genesisHash });
    await registerAndUpdate(conn, info, devAccounts(info.ss58Format)[5]!, json);
  });

  it("registers //Eve with a registration of the same shape made here, then updates its region", { timeout: 180_000 }, async () => {
    conn ??= connect(rpc!, () => undefined);
    const info = await chainInfo(conn.client);
    const eve = devAccounts(info.ss58Format)[4]!;
    await registerAndUpdate(conn, info, eve, nodeRegistration(info, eve.address, await freePort()));
  });
});
