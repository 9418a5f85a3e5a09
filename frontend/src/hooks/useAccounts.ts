import { useEffect, useState } from "react";
import { devAccounts, extensionAccounts, type Account } from "../lib/accounts";
import { isDevChain, type ChainInfo } from "../lib/chain";

/** Dev accounts on dev / local chains, then the browser extensions' accounts. */
export function useAccounts(info?: ChainInfo): { accounts: Account[]; note?: string } {
  const [accounts, setAccounts] = useState<Account[]>([]);
  const [note, setNote] = useState<string>();
  useEffect(() => {
    if (!info) return;
    let live = true;
    const dev = isDevChain(info) ? devAccounts(info.ss58Format) : [];
    setAccounts(dev);
    extensionAccounts().then((ext) => {
      if (!live) return;
      setAccounts([...dev, ...ext]);
      if (dev.length + ext.length === 0) setNote("Install a Polkadot.js-compatible extension to sign.");
      else setNote(undefined);
    });
    return () => {
      live = false;
    };
  }, [info]);
  return { accounts, note };
}
