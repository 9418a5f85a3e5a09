import { useEffect, useState } from "react";
import { AccountPicker } from "./components/AccountPicker";
import { Header } from "./components/Header";
import { useAccounts } from "./hooks/useAccounts";
import { useChain } from "./hooks/useChain";
import { useHashRoute } from "./hooks/useHashRoute";
import { rpcFromLocation } from "./lib/chain";
import { httpTrainerSource } from "./lib/source";
import { CreatePage } from "./pages/CreatePage";
import { JobPage } from "./pages/JobPage";
import { JobsPage } from "./pages/JobsPage";
import { NetworkPage } from "./pages/NetworkPage";
import { ProviderPage } from "./pages/ProviderPage";
import { ProvidersPage } from "./pages/ProvidersPage";
import { ProviderUpdatePanel } from "./pages/ProviderUpdatePanel";
import { RegisterPage } from "./pages/RegisterPage";

export function App() {
  const [url, setUrl] = useState(() => rpcFromLocation(window.location.search));
  const chain = useChain(url);
  const route = useHashRoute();
  const { accounts, note } = useAccounts(chain.info);
  const [selected, setSelected] = useState<string>();
  const account = accounts.find((a) => a.address === selected) ?? accounts[0];
  const [balance, setBalance] = useState<bigint>();

  const connectTo = (next: string) => {
    const params = new URLSearchParams(window.location.search);
    params.set("rpc", next);
    window.history.replaceState(null, "", `?${params}${window.location.hash}`);
    setUrl(next);
  };

  useEffect(() => {
    if (!chain.source || !chain.best || !account) return setBalance(undefined);
    let live = true;
    chain.source.free(account.address, chain.best.hash).then(
      (b) => live && setBalance(b),
      () => live && setBalance(undefined),
    );
    return () => {
      live = false;
    };
  }, [chain.source, chain.best, account]);

  const at = chain.best?.hash;
  const current = (page: string) => (route.page === page ? "page" : undefined);
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <Header
        url={url}
        onConnect={connectTo}
        state={chain.state}
        chainName={chain.info?.name}
        best={chain.best?.number}
        finalized={chain.finalized?.number}
      >
        <AccountPicker
          accounts={accounts}
          selected={account?.address}
          onSelect={setSelected}
          balance={balance}
          note={note}
        />
      </Header>
      <nav className="tabs" aria-label="Sections">
        <a href="#/jobs" aria-current={current("jobs") ?? current("job")}>
          Jobs
        </a>
        <a href="#/create" aria-current={current("create")}>
          Post a job
        </a>
        <a href="#/providers" aria-current={current("providers") ?? current("provider") ?? current("register")}>
          Providers
        </a>
        <a href="#/network" aria-current={current("network")}>
          Network
        </a>
      </nav>
      <main id="main" tabIndex={-1}>
        {chain.error && <p role="alert">{chain.error}</p>}
        {route.page === "jobs" && <JobsPage source={chain.source} at={at} />}
        {route.page === "job" && (
          <JobPage
            source={chain.source}
            activity={chain.activity}
            id={route.id}
            at={at}
            now={chain.best?.number}
            rpcUrl={url}
            account={account}
          />
        )}
        {route.page === "create" && (
          <CreatePage source={chain.source} account={account} connected={chain.state === "connected"} />
        )}
        {route.page === "providers" && <ProvidersPage source={chain.providers} at={at} />}
        {route.page === "provider" && (
          <ProviderPage
            key={route.who}
            source={chain.providers}
            activity={chain.activity}
            who={route.who} at={at} now={chain.best?.number} account={account} />
        )}
        {route.page === "provider" && (
          <ProviderUpdatePanel key={`update-${route.who}`} source={chain.registration} who={route.who} at={at} account={account} />
        )}
        {route.page === "register" && (
          <RegisterPage source={chain.registration} at={at} account={account} genesisHash={chain.info?.genesisHash} />
        )}
        {route.page === "network" && <NetworkPage source={chain.network} at={at} trainers={httpTrainerSource} />}
        {route.page === "missing" && (
          <p role="alert">
            Nothing at {route.path}. <a href="#/jobs">Back to the jobs</a>.
          </p>
        )}
      </main>
    </>
  );
}
