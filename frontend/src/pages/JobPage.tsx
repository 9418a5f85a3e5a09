import { useEffect, useMemo, useState } from "react";
import { ChallengesSection } from "../components/ChallengesSection";
import { JobDetailView } from "../components/JobDetailView";
import { LossSection } from "../components/LossSection";
import { useJobActivity } from "../hooks/useActivity";
import { useTx } from "../hooks/useTx";
import type { Account } from "../lib/accounts";
import type { ActivitySource } from "../lib/activity";
import type { JobConstants } from "../lib/chain";
import { foldJobEvent, type JobDetail, type RoundRow } from "../lib/jobs";
import type { GridSource } from "../lib/source";

export interface JobPageProps {
  source?: GridSource;
  /** Loss curve, challenges and past events; without it those sections are left out. */
  activity?: ActivitySource;
  id: bigint;
  at?: string;
  /** Best block number. */
  now?: number;
  rpcUrl: string;
  account?: Account;
}

/** One job: re-read at every best block, with rounds and rewards seen live in events. */
export function JobPage({ source, activity, id, at, now, rpcUrl, account }: JobPageProps) {
  const [detail, setDetail] = useState<JobDetail | null>();
  const [error, setError] = useState<string>();
  const [live, setLive] = useState<RoundRow[]>([]);
  const cancel = useTx();
  const challenge = useTx();
  const [target, setTarget] = useState<{ round: number; provider: string }>();
  const [constants, setConstants] = useState<JobConstants>();
  const whoKey = detail ? detail.participants.map((p) => p.who).join(",") : "";
  const participants = useMemo(() => (whoKey ? whoKey.split(",") : []), [whoKey]);
  const insight = useJobActivity(activity, id, detail?.job, participants, at);
  const isBuyer = !!account && !!detail && account.address === detail.job.buyer;

  // What a challenge costs, read once the buyer is on the page.
  useEffect(() => {
    if (!source || !isBuyer) return;
    let current = true;
    Promise.resolve()
      .then(() => source.constants())
      .then(
        (c) => current && setConstants(c),
        () => undefined,
      );
    return () => {
      current = false;
    };
  }, [source, isBuyer]);

  useEffect(() => {
    if (!source || !at) return;
    let current = true;
    source.job(id, at).then(
      (d) => {
        if (!current) return;
        setDetail(d ?? null);
        setError(undefined);
      },
      (e: unknown) => current && setError(String(e)),
    );
    return () => {
      current = false;
    };
  }, [source, id, at]);

  useEffect(() => {
    setLive([]);
    if (!source) return;
    const sub = source.jobEvents(id).subscribe({
      next: (e) => setLive((rows) => foldJobEvent(rows, e)),
      error: () => undefined,
    });
    return () => sub.unsubscribe();
  }, [source, id]);

  if (error) return <p role="alert">Could not read job #{id.toString()}: {error}</p>;
  if (detail === undefined) return <p aria-busy="true">Loading job #{id.toString()}…</p>;
  if (detail === null) return <p role="alert">There is no job #{id.toString()} on this chain.</p>;
  const live_ = detail.job.status === "Open" || detail.job.status === "Running";
  const canCancel = isBuyer && live_;
  const onChallenge = (round: number, provider: string) => {
    if (!source || !account) return;
    setTarget({ round, provider });
    challenge.run(source.challenge(id, round, provider, account.signer));
  };
  return (
    <JobDetailView
      detail={detail}
      liveRounds={live}
      rpcUrl={rpcUrl}
      canCancel={canCancel}
      onCancel={() => source && account && cancel.run(source.cancelJob(id, account.signer))}
      cancelTx={cancel.state.phase === "idle" ? undefined : cancel.state}
      canChallenge={isBuyer}
      onChallenge={onChallenge}
      challengeTx={challenge.state.phase === "idle" || !target ? undefined : { state: challenge.state, ...target }}
      challengeCost={constants && { deposit: constants.challengeDeposit, fee: constants.challengeFee }}
      now={now}
      progress={
        activity && <LossSection job={id} series={insight.series} trainers={insight.trainers} polling={insight.polling} />
      }
    >
      {activity && (
        <ChallengesSection
          challenges={insight.challenges}
          incidents={insight.incidents}
          scan={insight.scan}
          scanning={insight.scanning}
          error={insight.challengeError}
          now={now}
        />
      )}
    </JobDetailView>
  );
}
