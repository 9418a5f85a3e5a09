import { useEffect, useState } from "react";
import { EarningsChart } from "../components/EarningsChart";
import { ProviderDetailView } from "../components/ProviderDetailView";
import { StakeActions } from "../components/StakeActions";
import { useProviderEarnings } from "../hooks/useActivity";
import { useTx } from "../hooks/useTx";
import type { Account } from "../lib/accounts";
import type { ActivitySource } from "../lib/activity";
import { shortAddress } from "../lib/format";
import {
  foldProviderEvent,
  type ProviderConstants,
  type ProviderEvent,
  type ProviderJobRow,
  type ProviderRow,
} from "../lib/providers";
import type { ProviderSource } from "../lib/source";

export interface ProviderPageProps {
  source?: ProviderSource;
  /** Rewards and slashes over time; without it that chart is left out. */
  activity?: ActivitySource;
  who: string;
  /** Best block hash and number. */
  at?: string;
  now?: number;
  account?: Account;
}

/**
 * One provider: its record and jobs re-read at every best block, rewards and slashes seen live,
 * and stake actions when the selected account is this provider.
 */
export function ProviderPage({ source, activity, who, at, now, account }: ProviderPageProps) {
  const [provider, setProvider] = useState<ProviderRow | null>();
  const [jobs, setJobs] = useState<ProviderJobRow[]>();
  const [error, setError] = useState<string>();
  const [events, setEvents] = useState<ProviderEvent[]>([]);
  const [constants, setConstants] = useState<ProviderConstants>();
  const [free, setFree] = useState<bigint>();
  const [label, setLabel] = useState("Transaction");
  const tx = useTx();
  const own = !!account && account.address === who;
  const earnings = useProviderEarnings(activity, who, at, provider ? provider.registeredAt : undefined);

  useEffect(() => {
    if (!source || !at) return;
    let current = true;
    source.provider(who, at).then(
      (p) => {
        if (!current) return;
        setProvider(p ?? null);
        setError(undefined);
      },
      (e: unknown) => current && setError(String(e)),
    );
    source.providerJobs(who, at).then(
      (rows) => current && setJobs(rows),
      () => undefined,
    );
    if (own) source.free(who, at).then((b) => current && setFree(b), () => undefined);
    return () => {
      current = false;
    };
  }, [source, who, at, own]);

  useEffect(() => {
    if (!source) return;
    let current = true;
    source.constants().then((c) => current && setConstants(c), () => undefined);
    return () => {
      current = false;
    };
  }, [source]);

  useEffect(() => {
    setEvents([]);
    if (!source) return;
    const sub = source.events(who).subscribe({
      next: (e) => setEvents((rows) => foldProviderEvent(rows, e)),
      error: () => undefined,
    });
    return () => sub.unsubscribe();
  }, [source, who]);

  if (error) return <p role="alert">Could not read provider {shortAddress(who)}: {error}</p>;
  if (provider === undefined) return <p aria-busy="true">Loading provider {shortAddress(who)}…</p>;
  if (provider === null)
    return (
      <p role="alert">
        {who} is not a registered provider on this chain. <a href="#/providers">Back to the providers</a>.
      </p>
    );
  const run = (name: string, make: (a: Account) => ReturnType<ProviderSource["unbond"]>) => {
    if (!source || !account) return;
    setLabel(name);
    tx.run(make(account));
  };
  return (
    <ProviderDetailView provider={provider} jobs={jobs} events={events} now={now} after={activity && <EarningsChart {...earnings} />}>
      {own && source && (
        <StakeActions
          provider={provider}
          now={now ?? 0}
          minStake={constants?.minStake}
          free={free}
          onBond={(amount) => run("Bond more", (a) => source.bondMore(amount, a.signer))}
          onUnbond={(amount) => run("Unbond", (a) => source.unbond(amount, a.signer))}
          onWithdraw={() => run("Withdraw", (a) => source.withdrawUnbonded(a.signer))}
          tx={tx.state.phase === "idle" ? undefined : tx.state}
          txLabel={label}
        />
      )}
    </ProviderDetailView>
  );
}
