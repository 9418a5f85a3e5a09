// Signing accounts: the well-known dev accounts (sr25519 from the dev phrase, for dev and
// local chains only) and the accounts of Polkadot.js-compatible browser extensions.
import { sr25519CreateDerive } from "@polkadot-labs/hdkd";
import { DEV_MINI_SECRET, ss58Address } from "@polkadot-labs/hdkd-helpers";
import type { PolkadotSigner } from "polkadot-api";
import { connectInjectedExtension, getInjectedExtensions } from "polkadot-api/pjs-signer";
import { getPolkadotSigner } from "polkadot-api/signer";

export interface Account {
  address: string;
  name: string;
  /** "dev" or the extension's name. */
  source: string;
  signer: PolkadotSigner;
}

export const DEV_NAMES = ["Alice", "Bob", "Charlie", "Dave", "Eve", "Ferdie"] as const;

let derive: ((path: string) => { publicKey: Uint8Array; sign: (m: Uint8Array) => Uint8Array }) | undefined;

/** //Alice … //Ferdie, as `grid-node --dev` funds them. */
export function devAccounts(ss58Format = 42): Account[] {
  derive ??= sr25519CreateDerive(DEV_MINI_SECRET);
  return DEV_NAMES.map((name) => {
    const pair = derive!(`//${name}`);
    return {
      address: ss58Address(pair.publicKey, ss58Format),
      name,
      source: "dev",
      signer: getPolkadotSigner(pair.publicKey, "Sr25519", pair.sign),
    };
  });
}

/** Names of the injected extensions present in this browser. */
export function extensionNames(): string[] {
  try {
    return getInjectedExtensions();
  } catch {
    return [];
  }
}

/** Asks each extension for access and collects its accounts (those it refuses are skipped). */
export async function extensionAccounts(dappName = "Grid"): Promise<Account[]> {
  const accounts: Account[] = [];
  for (const name of extensionNames()) {
    try {
      const ext = await connectInjectedExtension(name, dappName);
      for (const a of ext.getAccounts()) {
        accounts.push({ address: a.address, name: a.name ?? a.address, source: name, signer: a.polkadotSigner });
      }
    } catch {
      // The user declined, or the extension failed: leave its accounts out.
    }
  }
  return accounts;
}
