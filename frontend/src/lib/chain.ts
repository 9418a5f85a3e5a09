// The connection to a Grid node: a polkadot-api client over WebSocket with the typed API
// generated from metadata/grid.scale.
import { grid } from "@polkadot-api/descriptors";
import { createClient, type PolkadotClient, type TypedApi } from "polkadot-api";
import { getWsProvider, WsEvent, type StatusChange } from "polkadot-api/ws";
import type { SpecLimits } from "./spec";

export type GridApi = TypedApi<typeof grid>;

export const DEFAULT_RPC = "ws://127.0.0.1:9944";

/** The node URL: `?rpc=` if given, else the default. */
export function rpcFromLocation(search: string): string {
  const rpc = new URLSearchParams(search).get("rpc");
  return rpc && /^wss?:\/\//.test(rpc) ? rpc : DEFAULT_RPC;
}

export type ConnectionState = "connecting" | "connected" | "error" | "closed";

export function connectionStateOf(status: StatusChange): ConnectionState {
  switch (status.type) {
    case WsEvent.CONNECTING:
      return "connecting";
    case WsEvent.CONNECTED:
      return "connected";
    case WsEvent.ERROR:
      return "error";
    case WsEvent.CLOSE:
      return "closed";
  }
}

export interface Connection {
  url: string;
  client: PolkadotClient;
  api: GridApi;
  disconnect: () => void;
}

/** Opens a client; `onState` follows the socket (it reconnects by itself). */
export function connect(url: string, onState: (state: ConnectionState) => void): Connection {
  const provider = getWsProvider(url, { onStatusChanged: (s) => onState(connectionStateOf(s)) });
  const client = createClient(provider);
  return { url, client, api: client.getTypedApi(grid), disconnect: () => client.destroy() };
}

export interface ChainInfo {
  name: string;
  genesisHash: string;
  /** "Development", "Local", "Live" (system_chainType), if the node says. */
  chainType?: string;
  ss58Format: number;
  tokenDecimals?: number;
  tokenSymbol?: string;
}

export async function chainInfo(client: PolkadotClient): Promise<ChainInfo> {
  const spec = await client.getChainSpecData();
  let chainType: string | undefined;
  try {
    const t = await client._request<unknown>("system_chainType", []);
    chainType = typeof t === "string" ? t : t && typeof t === "object" ? Object.keys(t)[0] : undefined;
  } catch {
    chainType = undefined;
  }
  const props = (spec.properties ?? {}) as Record<string, unknown>;
  return {
    name: spec.name,
    genesisHash: spec.genesisHash,
    chainType,
    ss58Format: typeof props.ss58Format === "number" ? props.ss58Format : 42,
    tokenDecimals: typeof props.tokenDecimals === "number" ? props.tokenDecimals : undefined,
    tokenSymbol: typeof props.tokenSymbol === "string" ? props.tokenSymbol : undefined,
  };
}

/** Dev accounts are offered on development and local chains only. */
export function isDevChain(info: Pick<ChainInfo, "name" | "chainType">): boolean {
  if (info.chainType) return info.chainType === "Development" || info.chainType === "Local";
  return /dev|local/i.test(info.name);
}

/**
 * The pallet's limits, protocol fee (Perbill parts), per-job storage deposit, and what a
 * challenge costs (`ChallengeDeposit`, held until the committee decides; `ChallengeFee`, never
 * refunded), from its constants.
 */
export interface JobConstants {
  limits: SpecLimits;
  protocolFee: number;
  jobDeposit: bigint;
  challengeDeposit: bigint;
  challengeFee: bigint;
}

export async function jobConstants(api: GridApi): Promise<JobConstants> {
  const c = api.constants.Jobs;
  const [
    maxRounds,
    maxParticipants,
    minRoundBlocks,
    maxRoundBlocks,
    maxChallengeWindow,
    maxJobBlocks,
    minVerifiableProviders,
    auditRate,
    fraudSlash,
    protocolFee,
    jobDeposit,
    challengeDeposit,
    challengeFee,
  ] = await Promise.all([
    c.MaxRounds(),
    c.MaxParticipants(),
    c.MinRoundBlocks(),
    c.MaxRoundBlocks(),
    c.MaxChallengeWindow(),
    c.MaxJobBlocks(),
    c.MinVerifiableProviders(),
    c.AuditRate(),
    c.FraudSlash(),
    c.ProtocolFee(),
    c.JobDeposit(),
    c.ChallengeDeposit(),
    c.ChallengeFee(),
  ]);
  return {
    limits: {
      maxRounds,
      maxParticipants,
      minRoundBlocks,
      maxRoundBlocks,
      maxChallengeWindow,
      maxJobBlocks,
      minVerifiableProviders,
      auditRate,
      fraudSlash,
    },
    protocolFee,
    jobDeposit,
    challengeDeposit,
    challengeFee,
  };
}
