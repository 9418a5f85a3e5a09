import { useEffect, useState } from "react";
import { ProvidersList } from "../components/ProvidersList";
import type { ProviderRow } from "../lib/providers";
import type { ProviderSource } from "../lib/source";

/** All registered providers, re-read at every new best block. */
export function ProvidersPage({ source, at }: { source?: ProviderSource; at?: string }) {
  const [providers, setProviders] = useState<ProviderRow[]>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    if (!source || !at) return;
    let live = true;
    source.providers(at).then(
      (rows) => {
        if (!live) return;
        setProviders(rows);
        setError(undefined);
      },
      (e: unknown) => live && setError(String(e)),
    );
    return () => {
      live = false;
    };
  }, [source, at]);
  if (error) return <p role="alert">Could not read providers: {error}</p>;
  if (!providers) return <p aria-busy="true">Loading providers…</p>;
  return <ProvidersList providers={providers} />;
}
