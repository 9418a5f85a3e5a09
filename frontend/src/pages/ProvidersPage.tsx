import { ProvidersList } from "../components/ProvidersList";
import { useLoaded } from "../hooks/useLoaded";
import type { ProviderSource } from "../lib/source";

/** All registered providers, re-read at every new best block. */
export function ProvidersPage({ source, at }: { source?: ProviderSource; at?: string }) {
  const { value: providers, error } = useLoaded(source, at, (s, at) => s.providers(at));
  if (error) return <p role="alert">Could not read providers: {error}</p>;
  if (!providers) return <p aria-busy="true">Loading providers…</p>;
  return <ProvidersList providers={providers} actions={<a href="#/providers/register">Register as a provider</a>} />;
}
