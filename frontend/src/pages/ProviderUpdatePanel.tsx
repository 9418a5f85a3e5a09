import { ProviderUpdateForm } from "../components/ProviderUpdateForm";
import { useLoaded } from "../hooks/useLoaded";
import { useTx } from "../hooks/useTx";
import type { Account } from "../lib/accounts";
import type { RegistrationSource } from "../lib/source";

export interface ProviderUpdatePanelProps {
  source?: RegistrationSource;
  /** The provider whose page this is. */
  who: string;
  /** Best block hash. */
  at?: string;
  account?: Account;
}

/**
 * On a provider's page, when the selected account is that provider: the form for
 * `Providers.update`, prefilled from its record (read at the best block); nothing otherwise.
 */
export function ProviderUpdatePanel({ source, who, at, account }: ProviderUpdatePanelProps) {
  const own = !!account && account.address === who;
  const { value: provider } = useLoaded(own ? source : undefined, at, (s, at) => s.provider(who, at));
  const tx = useTx();
  if (!own || !source || !provider) return null;
  return (
    <ProviderUpdateForm
      key={who}
      provider={provider}
      onSubmit={(update) => tx.run(source.update(update, account.signer))}
      tx={tx.state.phase === "idle" ? undefined : tx.state}
    />
  );
}
