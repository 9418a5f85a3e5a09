import { useEffect, useState } from "react";
import { EventFeed } from "../components/EventFeed";
import { ProviderHealthTable } from "../components/ProviderHealthTable";
import { foldBlockEvents, type ChainEventRow } from "../lib/events";
import { useLoaded } from "../hooks/useLoaded";
import type { NetworkSource } from "../lib/source";

/** The network: providers' health re-read at every best block, and a live feed of finalized events. */
export function NetworkPage({ source, at }: { source?: NetworkSource; at?: string }) {
  const { value: providers, error } = useLoaded(source, at, (s, at) => s.providers(at));
  const [events, setEvents] = useState<ChainEventRow[]>([]);

  useEffect(() => {
    setEvents([]);
    if (!source) return;
    const sub = source.blockEvents().subscribe({
      next: (batch) => setEvents((rows) => foldBlockEvents(rows, batch)),
      error: () => undefined,
    });
    return () => sub.unsubscribe();
  }, [source]);

  return (
    <section aria-labelledby="network-title" className="network">
      <div className="section-head">
        <h1 id="network-title">Network</h1>
      </div>
      {error ? (
        <p role="alert">Could not read providers: {error}</p>
      ) : !providers ? (
        <p aria-busy="true">Loading providers…</p>
      ) : (
        <ProviderHealthTable providers={providers} />
      )}
      <EventFeed events={events} />
    </section>
  );
}
