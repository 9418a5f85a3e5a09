import { useEffect, useState } from "react";
import { EventFeed } from "../components/EventFeed";
import { ProviderHealthTable } from "../components/ProviderHealthTable";
import { TrainerNetwork } from "../components/TrainerNetwork";
import { blockBatches, foldBlockEvents, type ChainEventRow } from "../lib/events";
import { describeScan } from "../lib/history";
import { useLoaded } from "../hooks/useLoaded";
import { useTrainerReports } from "../hooks/useTrainerReports";
import type { NetworkSource, TrainerSource } from "../lib/source";

export interface NetworkPageProps {
  source?: NetworkSource;
  /** Best block hash. */
  at?: string;
  /** Reads trainers' `/status`; without it the trainers' sections are left out. */
  trainers?: TrainerSource;
  /** Milliseconds between polls of the trainers. */
  pollMs?: number;
}

/** Finalized blocks whose events the feed starts with, read when the page opens. */
export const PAST_BLOCKS = 100;

/**
 * The network: providers' health re-read at every best block, what their trainers report about
 * each other (polled), and a live feed of finalized events.
 */
export function NetworkPage({ source, at, trainers, pollMs = 5000 }: NetworkPageProps) {
  const { value: providers, error } = useLoaded(source, at, (s, at) => s.providers(at));
  const reports = useTrainerReports(trainers, providers, pollMs);
  const [events, setEvents] = useState<ChainEventRow[]>([]);
  const [pastNote, setPastNote] = useState<string>();

  useEffect(() => {
    setEvents([]);
    setPastNote(undefined);
    if (!source) return;
    let live = true;
    const sub = source.blockEvents().subscribe({
      next: (batch) => setEvents((rows) => foldBlockEvents(rows, batch)),
      error: () => undefined,
    });
    // Blocks finalized before the page opened; the fold skips blocks the live feed already has.
    source.pastEvents?.(PAST_BLOCKS).then(
      (scan) => {
        if (!live) return;
        setEvents((rows) => blockBatches(scan.events).reduce((acc, batch) => foldBlockEvents(acc, batch), rows));
        setPastNote(describeScan(scan));
      },
      (e: unknown) => live && setPastNote(`Past blocks could not be read: ${e instanceof Error ? e.message : String(e)}.`),
    );
    return () => {
      live = false;
      sub.unsubscribe();
    };
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
        <>
          <ProviderHealthTable providers={providers} />
          {trainers && <TrainerNetwork providers={providers} reports={reports} everySeconds={pollMs / 1000} />}
        </>
      )}
      <EventFeed events={events} note={pastNote} />
    </section>
  );
}
