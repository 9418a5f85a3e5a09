import { describe, expect, it } from "vitest";
import { ALICE, BOB, CAPABILITIES, provider } from "../test/fixtures";
import { GENESIS, PEER, PUBLIC, registrationJson } from "../test/registration";
import {
  buildUpdate,
  capabilityErrors,
  draftOf,
  ed25519PeerId,
  endpointError,
  multiaddrsError,
  parseRegistration,
  sameAccount,
  validateRegistrationStake,
} from "./registration";
import { UNIT } from "./units";

const ctx = { genesisHash: GENESIS, account: ALICE, alreadyRegistered: false };
const errorsOf = (value: unknown, c = ctx) => parseRegistration(typeof value === "string" ? value : JSON.stringify(value), c).errors;

describe("a pasted registration", () => {
  it("parses what the CLI prints into the call's arguments", () => {
    const parsed = parseRegistration(JSON.stringify(registrationJson()), ctx);
    expect(parsed.errors).toEqual([]);
    expect(parsed.registration).toEqual({
      genesis: GENESIS,
      account: ALICE,
      peerId: PEER,
      peerPublic: PUBLIC,
      peerSignature: `0x${"ab".repeat(64)}`,
      multiaddrs: [`/ip4/127.0.0.1/tcp/40333/p2p/${PEER}`],
      endpoint: "http://127.0.0.1:8090/health",
      stake: 200n * UNIT,
      capabilities: CAPABILITIES,
    });
  });

  it("derives the peer id from the public key as libp2p does", () => {
    expect(ed25519PeerId(PUBLIC)).toBe(PEER);
  });

  it("accepts upper-case hex and fractional stakes, and skips checks it has no context for", () => {
    const parsed = parseRegistration(
      JSON.stringify(registrationJson({ genesis: GENESIS.toUpperCase().replace("0X", "0x"), stake_grid: 150.25 })),
      {},
    );
    expect(parsed.errors).toEqual([]);
    expect(parsed.registration?.genesis).toBe(GENESIS);
    expect(parsed.registration?.stake).toBe(150n * UNIT + UNIT / 4n);
  });

  it("asks for something when empty, and says what is not JSON or not a registration", () => {
    expect(errorsOf("  ")).toEqual(["paste the JSON printed by grid-trainer registration --config provider.toml"]);
    expect(errorsOf("{nope")[0]).toMatch(/^not valid JSON: /);
    expect(errorsOf("[1]")).toEqual(["the JSON is not an object"]);
    expect(errorsOf(registrationJson({ format: "grid/job/v1" }))).toEqual([
      'not a registration: format is "grid/job/v1", expected "grid/registration/v1" (print one with grid-trainer registration)',
    ]);
    expect(errorsOf({})[0]).toMatch(/format is null/);
  });

  it("refuses a registration made for another chain", () => {
    expect(errorsOf(registrationJson({ genesis: `0x${"34".repeat(32)}` }))).toEqual([
      `made for another chain: its genesis is 0x${"34".repeat(32)}, the connected chain's is ${GENESIS}`,
    ]);
  });

  it("says which account it is for when another is selected", () => {
    expect(errorsOf(registrationJson(), { ...ctx, account: BOB })).toEqual([
      `made for account ${ALICE}: select that account to sign it (the selected one is ${BOB})`,
    ]);
    expect(errorsOf(registrationJson({ account: "5nope" }))).toEqual(['account "5nope" is not an ss58 address']);
  });

  it("compares accounts whatever their ss58 prefix", () => {
    // Alice under the Polkadot prefix (0).
    expect(sameAccount(ALICE, "15oF4uVJwmo4TdGW7VfQxNLavjCXviqxT9S1MgbjMNHr6Sp5")).toBe(true);
    expect(sameAccount(ALICE, BOB)).toBe(false);
    expect(sameAccount("x", "x")).toBe(false);
  });

  it("tells an account that is already a provider", () => {
    expect(errorsOf(registrationJson(), { ...ctx, alreadyRegistered: true })).toEqual([
      `${ALICE} is already a registered provider`,
    ]);
  });

  it("checks the key's and the signature's hex and lengths, and the peer id against the key", () => {
    expect(errorsOf(registrationJson({ peer_public: "0xabcd" }))).toEqual([
      "peer_public must be 32 bytes (64 hex digits), not 4 digits",
    ]);
    expect(errorsOf(registrationJson({ peer_signature: `0x${"zz".repeat(64)}` }))).toEqual([
      "peer_signature is not 0x-prefixed hex",
    ]);
    expect(errorsOf(registrationJson({ peer_signature: undefined }))).toEqual([
      "peer_signature is missing (0x and 128 hex digits expected)",
    ]);
    expect(errorsOf(registrationJson({ genesis: "12".repeat(32) }))).toEqual(["genesis is not 0x-prefixed hex"]);
    expect(errorsOf(registrationJson({ peer_id: "" }))).toEqual(["peer_id is missing"]);
    expect(errorsOf(registrationJson({ peer_public: `0x${"00".repeat(32)}` }))[0]).toMatch(
      new RegExp(`^peer_id ${PEER} is not the peer id of peer_public \\(12D3KooW`),
    );
  });

  it("needs one to eight multiaddrs, each text starting with /", () => {
    expect(errorsOf(registrationJson({ multiaddrs: [] }))).toEqual(["at least one listen multiaddr is needed"]);
    expect(errorsOf(registrationJson({ multiaddrs: "/ip4/1.2.3.4/tcp/1" }))).toEqual(["at least one listen multiaddr is needed"]);
    expect(errorsOf(registrationJson({ multiaddrs: ["1.2.3.4:30333"] }))).toEqual([
      '"1.2.3.4:30333" is not a multiaddr (text starting with /, like /ip4/1.2.3.4/tcp/30333)',
    ]);
    expect(errorsOf(registrationJson({ multiaddrs: Array(9).fill("/ip4/1.2.3.4/tcp/1") }))).toEqual(["at most 8 multiaddrs"]);
    expect(multiaddrsError([`/dns/${"a".repeat(130)}`])).toMatch(/longer than 128 bytes/);
  });

  it("needs an http(s) endpoint of at most 128 bytes", () => {
    expect(errorsOf(registrationJson({ endpoint: "127.0.0.1:8090/health" }))).toEqual([
      "the endpoint must be an http:// or https:// URL",
    ]);
    expect(errorsOf(registrationJson({ endpoint: "http://" }))).toEqual(["the endpoint must be an http:// or https:// URL"]);
    expect(errorsOf(registrationJson({ endpoint: 8090 }))).toEqual(["the endpoint is missing"]);
    expect(endpointError(`https://${"h".repeat(130)}`)).toBe("the endpoint is longer than 128 bytes");
    expect(endpointError("https://gpu.example/health")).toBeUndefined();
  });

  it("needs a stake in GRID", () => {
    expect(errorsOf(registrationJson({ stake_grid: "200" }))).toEqual(['stake_grid "200" is not an amount of GRID']);
    expect(errorsOf(registrationJson({ stake_grid: -1 }))).toEqual(["stake_grid -1 is not an amount of GRID"]);
  });

  it("checks the capabilities as the pallet does", () => {
    expect(errorsOf(registrationJson({ capabilities: undefined }))).toEqual(["capabilities are missing"]);
    expect(
      errorsOf(
        registrationJson(
          {},
          {
            device: "Tpu",
            device_name: "",
            device_count: 0,
            memory_mib: -1,
            tflops_milli: 1.5,
            bandwidth_mbps: 2 ** 32,
            region: "r".repeat(33),
          },
        ),
      ),
    ).toEqual([
      "capabilities.device: device must be one of Cpu, Cuda, Rocm, Metal",
      "capabilities.device_name: the device name must not be empty",
      "capabilities.device_count: the device count must be a whole number from 1 to 255",
      "capabilities.memory_mib: memory must be a whole number of MiB (at most 4294967295)",
      "capabilities.tflops_milli: throughput must be a whole number of milli-TFLOP/s (at most 4294967295)",
      "capabilities.bandwidth_mbps: bandwidth must be a whole number of Mbit/s (at most 4294967295)",
      "capabilities.region: the region is longer than 32 bytes",
    ]);
    expect(capabilityErrors({ ...registrationJson().capabilities, deviceName: "é".repeat(33) }).deviceName).toBe(
      "the device name is longer than 64 bytes",
    );
    expect(errorsOf(registrationJson({}, { device_count: 256 }))).toEqual([
      "capabilities.device_count: the device count must be a whole number from 1 to 255",
    ]);
    expect(errorsOf(registrationJson({}, { region: 7 }))).toEqual(["capabilities.region: the region must be text"]);
  });

  it("lists every problem at once", () => {
    expect(errorsOf(registrationJson({ genesis: `0x${"34".repeat(32)}`, multiaddrs: [], endpoint: "x" }))).toHaveLength(3);
  });
});

describe("the registration's stake", () => {
  const limits = { minStake: 100n * UNIT, free: 1_000n * UNIT };
  it("is GRID between the minimum stake and the free balance", () => {
    expect(validateRegistrationStake("200", limits)).toBe(200n * UNIT);
    expect(validateRegistrationStake("1000", limits)).toBe(1_000n * UNIT);
    expect(validateRegistrationStake("99.9", limits)).toBe("below the minimum stake of 100 GRID");
    expect(validateRegistrationStake("1000.5", limits)).toBe("more than the account's free balance (1,000 GRID)");
    expect(validateRegistrationStake("0", limits)).toBe("must be more than zero");
    expect(validateRegistrationStake("ten", limits)).toBe("must be a non-negative number of GRID");
    expect(validateRegistrationStake("5", {})).toBe(5n * UNIT);
  });
});

describe("the update form", () => {
  const p = provider(ALICE);
  it("prefills from the record and sends nothing until something changes", () => {
    const draft = draftOf(p);
    expect(draft).toMatchObject({ device: "Cpu", deviceCount: "1", multiaddrs: "/ip4/127.0.0.1/tcp/40333", endpoint: p.endpoint });
    expect(buildUpdate(draft, p)).toEqual({ errors: {}, nothing: true });
  });

  it("sends only what changed: capabilities as a whole, addresses, endpoint", () => {
    expect(buildUpdate({ ...draftOf(p), region: " eu-west " }, p)).toEqual({
      update: { capabilities: { ...p.capabilities, region: "eu-west" } },
    });
    expect(buildUpdate({ ...draftOf(p), multiaddrs: "/ip4/10.0.0.1/tcp/1\n\n /ip4/10.0.0.2/tcp/2 " }, p)).toEqual({
      update: { multiaddrs: ["/ip4/10.0.0.1/tcp/1", "/ip4/10.0.0.2/tcp/2"] },
    });
    expect(buildUpdate({ ...draftOf(p), endpoint: "https://gpu.example/health", deviceCount: "2" }, p)).toEqual({
      update: { capabilities: { ...p.capabilities, deviceCount: 2 }, endpoint: "https://gpu.example/health" },
    });
  });

  it("gives each field's error", () => {
    const r = buildUpdate(
      { ...draftOf(p), deviceCount: "two", memoryMib: "1.5", deviceName: " ", multiaddrs: "", endpoint: "ftp://x" },
      p,
    );
    expect(r.errors).toEqual({
      deviceCount: "the device count must be a whole number from 1 to 255",
      memoryMib: "memory must be a whole number of MiB (at most 4294967295)",
      deviceName: "the device name must not be empty",
      multiaddrs: "at least one listen multiaddr is needed",
      endpoint: "the endpoint must be an http:// or https:// URL",
    });
    expect(buildUpdate({ ...draftOf(p), device: "Tpu" }, p).errors).toEqual({ device: "device must be one of Cpu, Cuda, Rocm, Metal" });
  });
});
