import { useEffect, useState } from "react";
import { RegisterProviderForm } from "../components/RegisterProviderForm";
import { useTx } from "../hooks/useTx";
import type { Account } from "../lib/accounts";
import type { ProviderConstants } from "../lib/providers";
import type { RegistrationSource } from "../lib/source";

export interface RegisterPageProps {
  source?: RegistrationSource;
  /** Best block hash. */
  at?: string;
  account?: Account;
  /** The connected chain's genesis hash. */
  genesisHash?: string;
}

/** `#/providers/register`: the selected account registers with its trainer's registration JSON. */
export function RegisterPage({ source, at, account, genesisHash }: RegisterPageProps) {
  const [constants, setConstants] = useState<ProviderConstants>();
  const [registered, setRegistered] = useState<boolean>();
  const [free, setFree] = useState<bigint>();
  const tx = useTx();
  const who = account?.address;

  useEffect(() => {
    if (!source) return;
    let live = true;
    source.constants().then((c) => live && setConstants(c), () => undefined);
    return () => {
      live = false;
    };
  }, [source]);

  useEffect(() => {
    setRegistered(undefined);
    setFree(undefined);
  }, [who]);

  useEffect(() => {
    if (!source || !at || !who) return;
    let live = true;
    source.provider(who, at).then((p) => live && setRegistered(!!p), () => undefined);
    source.free(who, at).then((b) => live && setFree(b), () => undefined);
    return () => {
      live = false;
    };
  }, [source, at, who]);

  return (
    <section aria-labelledby="register-page-title">
      <div className="section-head">
        <h1 id="register-page-title">Register a provider</h1>
        <a href="#/providers">Back to the providers</a>
      </div>
      {registered && tx.state.phase === "idle" && who && (
        <p role="note">
          The selected account is already a provider: <a href={`#/providers/${who}`}>its page</a> edits its capabilities
          and addresses.
        </p>
      )}
      <RegisterProviderForm
        account={who}
        genesisHash={genesisHash}
        alreadyRegistered={registered}
        minStake={constants?.minStake}
        free={free}
        onSubmit={(registration, stake) => source && account && tx.run(source.register(registration, stake, account.signer))}
        tx={tx.state.phase === "idle" ? undefined : tx.state}
      />
    </section>
  );
}
