import { useEffect, useMemo, useRef, useState } from "react";
import type { ActivitySource } from "../lib/activity";
import { foldChallenges, isIncidentEvent, jobIncidentsOf, mergeEventRows, type ChallengedRow, type OpenChallengeRow } from "../lib/challenges";
import type { ChainEventRow } from "../lib/events";
import type { HistoryScan } from "../lib/history";
import type { JobRow } from "../lib/jobs";
import { foldProofLosses, lossSeries, type ProofLoss, type TrainerReading } from "../lib/losses";
import { slashesOf, type RewardEntry } from "../lib/rewards";

/** How often a live job's trainers are asked for their `/status`. */
export const TRAINER_POLL_MS = 5000;

/**
 * Events kept by `keep` from past blocks (a bounded scan from block `from` to the finalized one)
 * and from each new finalized block while mounted, oldest first.
 */
export function useEventHistory(
  source: ActivitySource | undefined,
  from: number | undefined,
  keep: (e: ChainEventRow) => boolean,
): { rows: ChainEventRow[]; scan?: HistoryScan; scanning: boolean } {
  const [past, setPast] = useState<ChainEventRow[]>([]);
  const [live, setLive] = useState<ChainEventRow[]>([]);
  const [scan, setScan] = useState<HistoryScan>();
  const [scanning, setScanning] = useState(false);
  useEffect(() => {
    setPast([]);
    setLive([]);
    setScan(undefined);
    if (!source || from === undefined) return;
    const sub = source.blockEvents().subscribe({
      next: (b) => {
        const kept = b.events.filter(keep);
        if (kept.length) setLive((rows) => mergeEventRows(rows, kept));
      },
      error: () => undefined,
    });
    const abort = new AbortController();
    setScanning(true);
    source
      .finalizedNumber()
      .then((to) => source.scan(from, to, keep, abort.signal))
      .then(
        (s) => {
          if (abort.signal.aborted) return;
          setPast(s.events);
          setScan(s);
        },
        (e: unknown) =>
          !abort.signal.aborted &&
          setScan({ requested: { from, to: from }, pruned: false, truncated: false, events: [], reason: String(e) }),
      )
      .finally(() => !abort.signal.aborted && setScanning(false));
    return () => {
      abort.abort();
      sub.unsubscribe();
    };
    // `keep` is a module-level predicate.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [source, from]);
  const rows = useMemo(() => mergeEventRows(past, live), [past, live]);
  return { rows, scan, scanning };
}

/** The loss curve's data, the job's challenges and slashes, read per block and polled from trainers. */
export function useJobActivity(
  source: ActivitySource | undefined,
  id: bigint,
  job: JobRow | undefined,
  participants: readonly string[],
  at: string | undefined,
) {
  const [proofs, setProofs] = useState<ProofLoss[]>([]);
  const [state, setState] = useState<{ open: OpenChallengeRow[]; challenged: ChallengedRow[] }>({ open: [], challenged: [] });
  const [challengeError, setChallengeError] = useState<string>();
  const [endpoints, setEndpoints] = useState<Map<string, string>>();
  const [readings, setReadings] = useState<Map<string, TrainerReading>>(new Map());
  const running = job?.status === "Running";
  const live = job?.status === "Open" || running;
  const atRef = useRef(at);
  atRef.current = at;

  useEffect(() => setProofs([]), [source, id]);

  // The open round's proofs and the challenges, at every block.
  useEffect(() => {
    if (!source || !at || !job) return;
    let current = true;
    if (running)
      source.roundProofs(id, at).then(
        (fresh) => current && fresh.length > 0 && setProofs((kept) => foldProofLosses(kept, fresh)),
        () => undefined,
      );
    source.challenges(id, at).then(
      (c) => {
        if (!current) return;
        setState(c);
        setChallengeError(undefined);
      },
      (e: unknown) => current && setChallengeError(String(e)),
    );
    return () => {
      current = false;
    };
  }, [source, id, at, running, job !== undefined]); // eslint-disable-line react-hooks/exhaustive-deps

  // The participants' registered endpoints, read again when the participants change.
  const key = participants.join(",");
  useEffect(() => {
    const now = atRef.current;
    if (!source || !now || participants.length === 0) return setEndpoints(new Map());
    let current = true;
    source.endpoints(participants, now).then(
      (m) => current && setEndpoints(m),
      () => current && setEndpoints(new Map()),
    );
    return () => {
      current = false;
    };
  }, [source, key, at !== undefined]); // eslint-disable-line react-hooks/exhaustive-deps

  // Their trainers' `/status`: every few seconds while the job is live, once otherwise.
  useEffect(() => {
    if (!source || !endpoints) return;
    let current = true;
    const poll = () => {
      for (const [who, endpoint] of endpoints)
        source.trainerStatus(endpoint).then(
          (status) => current && setReadings((m) => new Map(m).set(who, { who, endpoint, status })),
          (e: unknown) =>
            current &&
            setReadings((m) => new Map(m).set(who, { who, endpoint, error: e instanceof Error ? e.message : String(e) })),
        );
    };
    poll();
    const timer = live ? setInterval(poll, TRAINER_POLL_MS) : undefined;
    return () => {
      current = false;
      if (timer) clearInterval(timer);
    };
  }, [source, endpoints, live]);

  const trainers: TrainerReading[] = useMemo(
    () =>
      participants.map(
        (who) =>
          readings.get(who) ??
          (endpoints && !endpoints.has(who) ? { who, error: "not a registered provider any more (no endpoint)" } : { who, endpoint: endpoints?.get(who) }),
      ),
    [participants, readings, endpoints],
  );
  const series = useMemo(() => lossSeries(trainers, proofs, id), [trainers, proofs, id]);

  const history = useEventHistory(source, job?.createdAt, isIncidentEvent);
  const accounts = useMemo(
    () => [...participants, ...state.open.flatMap((c) => [c.accused, ...c.committee.map((m) => m.who)])],
    [participants, state.open],
  );
  const incidents = useMemo(
    () => jobIncidentsOf(history.rows, id, [...state.challenged.map((c) => c.id), ...state.open.map((c) => c.id)], accounts),
    [history.rows, id, state, accounts],
  );
  const challenges = useMemo(() => foldChallenges(state.open, state.challenged, incidents), [state, incidents]);
  return { series, trainers, polling: live, challenges, incidents, challengeError, scan: history.scan, scanning: history.scanning };
}

const isSlash = (e: ChainEventRow) => e.pallet === "Providers" && e.name === "Slashed";

/** A provider's rewards (chain state, every block) and slashes (history scan from `from`, and live). */
export function useProviderEarnings(source: ActivitySource | undefined, who: string, at: string | undefined, from: number | undefined) {
  const [rewards, setRewards] = useState<RewardEntry[]>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    if (!source || !at) return;
    let current = true;
    source.providerRewards(who, at).then(
      (r) => {
        if (!current) return;
        setRewards(r);
        setError(undefined);
      },
      (e: unknown) => current && setError(String(e)),
    );
    return () => {
      current = false;
    };
  }, [source, who, at]);
  const history = useEventHistory(source, from, isSlash);
  const slashes = useMemo(() => slashesOf(history.rows, who), [history.rows, who]);
  return { rewards, slashes, error, scan: history.scan, scanning: history.scanning };
}
