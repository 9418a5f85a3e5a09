import { useEffect, useState } from "react";
import { chainActivitySource, type ActivitySource } from "../lib/activity";
import { chainInfo, connect, type ChainInfo, type Connection, type ConnectionState } from "../lib/chain";
import {
  chainNetworkSource,
  chainProviderSource,
  chainRegistrationSource,
  chainSource,
  type GridSource,
  type NetworkSource,
  type ProviderSource,
  type RegistrationSource,
} from "../lib/source";

export interface BlockHead {
  number: number;
  hash: string;
}

export interface ChainState {
  state: ConnectionState;
  connection?: Connection;
  source?: GridSource;
  providers?: ProviderSource;
  network?: NetworkSource;
  registration?: RegistrationSource;
  /** Loss curves, challenges, history scans, rewards over time. */
  activity?: ActivitySource;
  info?: ChainInfo;
  best?: BlockHead;
  finalized?: BlockHead;
  error?: string;
}

/** One client per node URL, with the chain's name and live best / finalized blocks. */
export function useChain(url: string): ChainState {
  const [chain, setChain] = useState<ChainState>({ state: "connecting" });
  useEffect(() => {
    let live = true;
    const update = (patch: Partial<ChainState>) => live && setChain((c) => ({ ...c, ...patch }));
    setChain({ state: "connecting" });
    const connection = connect(url, (state) => update({ state }));
    update({
      connection,
      source: chainSource(connection.api),
      providers: chainProviderSource(connection.api),
      network: chainNetworkSource(connection.api, connection.client),
      registration: chainRegistrationSource(connection.api),
      activity: chainActivitySource(connection.api, connection.client),
    });
    chainInfo(connection.client).then(
      (info) => update({ info }),
      (e: unknown) => update({ error: String(e) }),
    );
    const subs = [
      connection.client.bestBlocks$.subscribe({
        next: (blocks) => blocks[0] && update({ best: { number: blocks[0].number, hash: blocks[0].hash } }),
        error: (e: unknown) => update({ error: String(e) }),
      }),
      connection.client.finalizedBlock$.subscribe({
        next: (b) => update({ finalized: { number: b.number, hash: b.hash } }),
        error: (e: unknown) => update({ error: String(e) }),
      }),
    ];
    return () => {
      live = false;
      subs.forEach((s) => s.unsubscribe());
      connection.disconnect();
    };
  }, [url]);
  return chain;
}
