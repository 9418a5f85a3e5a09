// Registering a provider from the browser and editing its record. The libp2p key stays with
// the trainer: `grid-trainer registration --config provider.toml` prints the binding (peer
// public key and its signature over (genesis, account)), the addresses and the measured
// capabilities as JSON (`trainer/src/daemon/provider.rs` `registration()`); the page checks it here
// against the connected chain, the signing account and pallet-providers' rules
// (`pallets/providers/src/identity.rs`, the bounds in `primitives/src/provider.rs`) before it
// is signed. The same rules check the `update` form.
import { getSs58AddressInfo } from "polkadot-api";
import type { CapabilitiesRow, DeviceKindName, ProviderRow } from "./providers";
import { peerIdText } from "./trainer";
import { formatGrid, parseGrid } from "./units";

export const REGISTRATION_FORMAT = "grid/registration/v1";
export const DEVICE_KINDS: DeviceKindName[] = ["Cpu", "Cuda", "Rocm", "Metal"];
/** `MaxDeviceNameLen`, `MaxRegionLen`, `MaxAddressLen`, `MaxMultiaddrs` (bytes / count). */
export const MAX_DEVICE_NAME_LEN = 64;
export const MAX_REGION_LEN = 32;
export const MAX_ADDRESS_LEN = 128;
export const MAX_MULTIADDRS = 8;
const U32_MAX = 0xffff_ffff;

/** A checked registration, ready for `Providers.register` (hex lowercase, `0x`-prefixed). */
export interface Registration {
  genesis: string;
  account: string;
  peerId: string;
  peerPublic: string;
  peerSignature: string;
  multiaddrs: string[];
  endpoint: string;
  /** `stake_grid` in units: the form's default stake. */
  stake: bigint;
  capabilities: CapabilitiesRow;
}

/** What the registration is checked against; unknown parts are not checked (yet). */
export interface RegistrationContext {
  /** The connected chain's genesis hash. */
  genesisHash?: string;
  /** The selected signing account (ss58). */
  account?: string;
  /** Whether that account is already a provider. */
  alreadyRegistered?: boolean;
}

const byteLength = (text: string) => new TextEncoder().encode(text).length;

/** The public key of an ss58 address as hex, or undefined when it is not one. */
export function accountKey(address: string): string | undefined {
  try {
    const info = getSs58AddressInfo(address);
    if (!info.isValid) return undefined;
    return Array.from(info.publicKey, (b) => b.toString(16).padStart(2, "0")).join("");
  } catch {
    return undefined;
  }
}

/** Whether two ss58 addresses name the same account (whatever their network prefix). */
export function sameAccount(a: string, b: string): boolean {
  const x = accountKey(a);
  return x !== undefined && x === accountKey(b);
}

/** `0x` + exactly `bytes` bytes of hex, lowercased, or an error message. */
export function checkHex(value: unknown, bytes: number, what: string): string | { error: string } {
  if (typeof value !== "string") return { error: `${what} is missing (0x and ${bytes * 2} hex digits expected)` };
  const m = /^0x([0-9a-fA-F]*)$/.exec(value);
  if (!m) return { error: `${what} is not 0x-prefixed hex` };
  if (m[1]!.length !== bytes * 2)
    return { error: `${what} must be ${bytes} bytes (${bytes * 2} hex digits), not ${m[1]!.length} digits` };
  return value.toLowerCase();
}

/** The base58 peer id an ed25519 public key proves (`grid_primitives::provider::ed25519_peer_id`). */
export function ed25519PeerId(publicHex: string): string {
  return peerIdText(`0x002408011220${publicHex.replace(/^0x/, "")}`);
}

export type CapabilityErrors = Partial<Record<keyof CapabilitiesRow, string>>;

const isUint = (n: unknown, max: number): n is number => typeof n === "number" && Number.isInteger(n) && n >= 0 && n <= max;

/**
 * Capabilities as `validate_capabilities` and the SCALE types accept them: a known device,
 * a non-empty name of at most 64 bytes, 1–255 devices, u32 memory / throughput / bandwidth, a
 * region of at most 32 bytes. Field → message; empty when all is well.
 */
export function capabilityErrors(c: Partial<Record<keyof CapabilitiesRow, unknown>>): CapabilityErrors {
  const errors: CapabilityErrors = {};
  if (!DEVICE_KINDS.includes(c.device as DeviceKindName))
    errors.device = `device must be one of ${DEVICE_KINDS.join(", ")}`;
  if (typeof c.deviceName !== "string" || c.deviceName.trim() === "") errors.deviceName = "the device name must not be empty";
  else if (byteLength(c.deviceName) > MAX_DEVICE_NAME_LEN)
    errors.deviceName = `the device name is longer than ${MAX_DEVICE_NAME_LEN} bytes`;
  if (!isUint(c.deviceCount, 255) || c.deviceCount === 0) errors.deviceCount = "the device count must be a whole number from 1 to 255";
  if (!isUint(c.memoryMib, U32_MAX)) errors.memoryMib = "memory must be a whole number of MiB (at most 4294967295)";
  if (!isUint(c.tflopsMilli, U32_MAX)) errors.tflopsMilli = "throughput must be a whole number of milli-TFLOP/s (at most 4294967295)";
  if (!isUint(c.bandwidthMbps, U32_MAX)) errors.bandwidthMbps = "bandwidth must be a whole number of Mbit/s (at most 4294967295)";
  if (typeof c.region !== "string") errors.region = "the region must be text";
  else if (byteLength(c.region) > MAX_REGION_LEN) errors.region = `the region is longer than ${MAX_REGION_LEN} bytes`;
  return errors;
}

/** Listen multiaddrs as `validate_addresses` accepts them (1–8, each text starting with `/`, ≤128 bytes). */
export function multiaddrsError(multiaddrs: unknown): string | undefined {
  if (!Array.isArray(multiaddrs) || multiaddrs.length === 0) return "at least one listen multiaddr is needed";
  if (multiaddrs.length > MAX_MULTIADDRS) return `at most ${MAX_MULTIADDRS} multiaddrs`;
  for (const m of multiaddrs) {
    if (typeof m !== "string" || m.length < 2 || !m.startsWith("/"))
      return `${JSON.stringify(m)} is not a multiaddr (text starting with /, like /ip4/1.2.3.4/tcp/30333)`;
    if (byteLength(m) > MAX_ADDRESS_LEN) return `${m.slice(0, 24)}… is longer than ${MAX_ADDRESS_LEN} bytes`;
  }
  return undefined;
}

/** The probe endpoint as `validate_addresses` accepts it (`http://` or `https://` and a host, ≤128 bytes). */
export function endpointError(endpoint: unknown): string | undefined {
  if (typeof endpoint !== "string") return "the endpoint is missing";
  const host = /^https?:\/\/(.*)$/.exec(endpoint)?.[1];
  if (!host) return "the endpoint must be an http:// or https:// URL";
  if (byteLength(endpoint) > MAX_ADDRESS_LEN) return `the endpoint is longer than ${MAX_ADDRESS_LEN} bytes`;
  return undefined;
}

const CAPABILITY_KEYS: [keyof CapabilitiesRow, string][] = [
  ["device", "device"],
  ["deviceName", "device_name"],
  ["deviceCount", "device_count"],
  ["memoryMib", "memory_mib"],
  ["tflopsMilli", "tflops_milli"],
  ["bandwidthMbps", "bandwidth_mbps"],
  ["region", "region"],
];

/** A GRID amount given as a JSON number (`stake_grid`) in units, exactly as its decimal text. */
function gridOfNumber(value: unknown): bigint | undefined {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) return undefined;
  const text = value.toFixed(12).replace(/\.?0+$/, "");
  const units = parseGrid(text);
  return typeof units === "bigint" ? units : undefined;
}

export type ParsedRegistration = { registration: Registration; errors: [] } | { registration?: undefined; errors: string[] };

/**
 * Parses the JSON `grid-trainer registration` printed and checks it: the format tag, the chain
 * (genesis), the account, the key and signature lengths, the peer id against the key, the
 * addresses and the capabilities. Every problem found is listed.
 */
export function parseRegistration(text: string, ctx: RegistrationContext = {}): ParsedRegistration {
  if (text.trim() === "") return { errors: ["paste the JSON printed by grid-trainer registration --config provider.toml"] };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { errors: [`not valid JSON: ${e instanceof Error ? e.message : String(e)}`] };
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) return { errors: ["the JSON is not an object"] };
  const v = value as Record<string, unknown>;
  if (v.format !== REGISTRATION_FORMAT)
    return {
      errors: [
        `not a registration: format is ${JSON.stringify(v.format ?? null)}, expected "${REGISTRATION_FORMAT}" (print one with grid-trainer registration)`,
      ],
    };
  const errors: string[] = [];

  const genesis = checkHex(v.genesis, 32, "genesis");
  if (typeof genesis !== "string") errors.push(genesis.error);
  else if (ctx.genesisHash && genesis !== ctx.genesisHash.toLowerCase())
    errors.push(`made for another chain: its genesis is ${genesis}, the connected chain's is ${ctx.genesisHash.toLowerCase()}`);

  const account = typeof v.account === "string" ? v.account : "";
  if (!accountKey(account)) errors.push(`account ${JSON.stringify(v.account ?? null)} is not an ss58 address`);
  else if (ctx.account && !sameAccount(account, ctx.account))
    errors.push(`made for account ${account}: select that account to sign it (the selected one is ${ctx.account})`);
  else if (ctx.alreadyRegistered) errors.push(`${account} is already a registered provider`);

  const peerPublic = checkHex(v.peer_public, 32, "peer_public");
  if (typeof peerPublic !== "string") errors.push(peerPublic.error);
  const peerSignature = checkHex(v.peer_signature, 64, "peer_signature");
  if (typeof peerSignature !== "string") errors.push(peerSignature.error);
  const peerId = typeof v.peer_id === "string" ? v.peer_id : "";
  if (!peerId) errors.push("peer_id is missing");
  else if (typeof peerPublic === "string" && ed25519PeerId(peerPublic) !== peerId)
    errors.push(`peer_id ${peerId} is not the peer id of peer_public (${ed25519PeerId(peerPublic)})`);

  const multi = multiaddrsError(v.multiaddrs);
  if (multi) errors.push(multi);
  const end = endpointError(v.endpoint);
  if (end) errors.push(end);

  const stake = gridOfNumber(v.stake_grid);
  if (stake === undefined) errors.push(`stake_grid ${JSON.stringify(v.stake_grid ?? null)} is not an amount of GRID`);

  const raw = v.capabilities;
  let capabilities: CapabilitiesRow | undefined;
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) errors.push("capabilities are missing");
  else {
    const r = raw as Record<string, unknown>;
    const c = Object.fromEntries(CAPABILITY_KEYS.map(([k, json]) => [k, r[json]])) as Record<keyof CapabilitiesRow, unknown>;
    const capErrors = capabilityErrors(c);
    for (const [k, json] of CAPABILITY_KEYS) if (capErrors[k]) errors.push(`capabilities.${json}: ${capErrors[k]}`);
    if (Object.keys(capErrors).length === 0) capabilities = c as unknown as CapabilitiesRow;
  }

  if (errors.length > 0) return { errors };
  return {
    registration: {
      genesis: genesis as string,
      account,
      peerId,
      peerPublic: peerPublic as string,
      peerSignature: peerSignature as string,
      multiaddrs: v.multiaddrs as string[],
      endpoint: v.endpoint as string,
      stake: stake!,
      capabilities: capabilities!,
    },
    errors: [],
  };
}

/** The stake typed for `register` (GRID): at least `MinStake`, at most the free balance. */
export function validateRegistrationStake(textAmount: string, ctx: { minStake?: bigint; free?: bigint }): bigint | string {
  const amount = parseGrid(textAmount);
  if (typeof amount === "string") return amount;
  if (amount === 0n) return "must be more than zero";
  if (ctx.minStake !== undefined && amount < ctx.minStake) return `below the minimum stake of ${formatGrid(ctx.minStake)}`;
  if (ctx.free !== undefined && amount > ctx.free) return `more than the account's free balance (${formatGrid(ctx.free)})`;
  return amount;
}

/** What `Providers.update` changes: only the parts given. */
export interface ProviderUpdate {
  capabilities?: CapabilitiesRow;
  multiaddrs?: string[];
  endpoint?: string;
}

/** The update form's fields, as typed. */
export interface UpdateDraft {
  device: string;
  deviceName: string;
  deviceCount: string;
  memoryMib: string;
  tflopsMilli: string;
  bandwidthMbps: string;
  region: string;
  /** One multiaddr per line. */
  multiaddrs: string;
  endpoint: string;
}

/** The form prefilled from a provider's record. */
export function draftOf(p: Pick<ProviderRow, "capabilities" | "multiaddrs" | "endpoint">): UpdateDraft {
  const c = p.capabilities;
  return {
    device: c.device,
    deviceName: c.deviceName,
    deviceCount: String(c.deviceCount),
    memoryMib: String(c.memoryMib),
    tflopsMilli: String(c.tflopsMilli),
    bandwidthMbps: String(c.bandwidthMbps),
    region: c.region,
    multiaddrs: p.multiaddrs.join("\n"),
    endpoint: p.endpoint,
  };
}

export type UpdateErrors = CapabilityErrors & { multiaddrs?: string; endpoint?: string };

const wholeOrText = (text: string): number | string => (/^\d+$/.test(text.trim()) ? Number(text.trim()) : text);

/**
 * The update to send for `draft` against the record `p`: only what changed (capabilities as a
 * whole, as the call takes them), or the fields' errors, or "nothing changed".
 */
export function buildUpdate(
  draft: UpdateDraft,
  p: Pick<ProviderRow, "capabilities" | "multiaddrs" | "endpoint">,
): { update: ProviderUpdate; errors?: undefined } | { update?: undefined; errors: UpdateErrors; nothing?: boolean } {
  const c = {
    device: draft.device,
    deviceName: draft.deviceName,
    deviceCount: wholeOrText(draft.deviceCount),
    memoryMib: wholeOrText(draft.memoryMib),
    tflopsMilli: wholeOrText(draft.tflopsMilli),
    bandwidthMbps: wholeOrText(draft.bandwidthMbps),
    region: draft.region.trim(),
  };
  const multiaddrs = draft.multiaddrs
    .split("\n")
    .map((m) => m.trim())
    .filter((m) => m !== "");
  const endpoint = draft.endpoint.trim();
  const errors: UpdateErrors = capabilityErrors(c);
  const multi = multiaddrsError(multiaddrs);
  if (multi) errors.multiaddrs = multi;
  const end = endpointError(endpoint);
  if (end) errors.endpoint = end;
  if (Object.keys(errors).length > 0) return { errors };
  const capabilities = c as CapabilitiesRow;
  const update: ProviderUpdate = {};
  const old = p.capabilities;
  if ((Object.keys(old) as (keyof CapabilitiesRow)[]).some((k) => old[k] !== capabilities[k])) update.capabilities = capabilities;
  if (multiaddrs.join("\n") !== p.multiaddrs.join("\n")) update.multiaddrs = multiaddrs;
  if (endpoint !== p.endpoint) update.endpoint = endpoint;
  if (Object.keys(update).length === 0) return { errors: {}, nothing: true };
  return { update };
}
