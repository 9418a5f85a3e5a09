import type { ReactNode } from "react";
import { admissionText, type Admission } from "../lib/admission";
import { blocksToText, shortAddress, shortHash } from "../lib/format";
import {
  fetchCommand,
  lockProblem,
  mergeRounds,
  stakeLocked,
  type JobDetail,
  type JobParticipantRow,
  type JobRow,
  type RoundRow,
} from "../lib/jobs";
import { lockBinds } from "../lib/locks";
import { describeCompression, describeDataset, describeInitialWeights, describeModel, exchangeAllowanceMs, type JobSpec } from "../lib/spec";
import type { TxState } from "../lib/tx";
import { formatGrid, fromNanos } from "../lib/units";
import { ChallengeContributions, type ChallengeTx } from "./ChallengeContributions";
import { DatasetSource } from "./DatasetSource";
import { RoundStrip } from "./RoundStrip";
import { StatusBadge } from "./StatusBadge";
import { TxStatus } from "./TxStatus";

export interface JobDetailViewProps {
  detail: JobDetail;
  /** Rounds seen settling in events while the page is open. */
  liveRounds?: RoundRow[];
  rpcUrl: string;
  /** The selected account is the buyer and the job is live. */
  canCancel?: boolean;
  onCancel?: () => void;
  cancelTx?: TxState;
  /**
   * The selected account is the buyer: it may challenge the contributions of rounds still in
   * their challenge window (those `detail.rounds` carry).
   */
  canChallenge?: boolean;
  onChallenge?: (round: number, provider: string) => void;
  challengeTx?: ChallengeTx;
  /** `ChallengeDeposit` and `ChallengeFee`, when read. */
  challengeCost?: { deposit: bigint; fee: bigint };
  /** Best block number (the open round's time left). */
  now?: number;
  /** Shown after the spec and escrow (the loss curve). */
  progress?: ReactNode;
  /** Shown at the end (challenges and slashes). */
  children?: ReactNode;
}

/** A job's dataset: the shipped one's name or "own dataset", its URI as text and its reference; then where it comes from. */
function Dataset({ dataset }: { dataset: JobSpec["dataset"] }) {
  const { hash, uri, label } = describeDataset(dataset);
  return (
    <>
      {label}: <span className="mono break">{uri}</span>{" "}
      <span className="muted mono" title={hash}>
        {shortHash(hash)}
      </span>
      <DatasetSource dataset={{ hash, uri }} />
    </>
  );
}

/** A job's initial weights (fine-tuning): their URI as text and their reference, then where they come from; or the seeded initialisation. */
function InitialWeights({ weights }: { weights: JobSpec["initial_weights"] }) {
  const text = describeInitialWeights(weights);
  if (!text) return <>seeded initialisation</>;
  return (
    <>
      <span className="mono break">{text.uri}</span>{" "}
      <span className="muted mono" title={text.hash}>
        {shortHash(text.hash)}
      </span>
      <DatasetSource dataset={text} weights />
    </>
  );
}

/** The buyer's admission rules, with the allowlist's accounts. */
function AdmissionRules({ admission }: { admission: Admission }) {
  return (
    <>
      {admissionText(admission)}
      {admission.allowlist.length > 0 && (
        <ul className="allowlist" aria-label="Allowlist">
          {admission.allowlist.map((who) => (
            <li key={who} className="mono" title={who}>
              {shortAddress(who)}
            </li>
          ))}
        </ul>
      )}
    </>
  );
}

/**
 * A participant's stake locked for the job, as its provider record holds it. A live job's
 * member without its lock (or with less than the spec's minimum) is flagged: the chain's
 * invariants rule it out, so seeing it means something is wrong with the chain, not the job.
 */
function StakeLockCell({ job, p, now }: { job: JobRow; p: JobParticipantRow; now?: number }) {
  const { lock } = p;
  const problem = lockProblem(job, lock);
  const min = formatGrid(job.spec.min_provider_stake);
  if (problem)
    return (
      <td className="warning" title={`A member of a live job must have ${min} locked for it`}>
        {lock && problem === "short" ? `${formatGrid(lock.amount)} (below ${min}!)` : "— (no lock!)"}
      </td>
    );
  if (!lock) return <td className="muted">— (released)</td>;
  if (lock.until === undefined) return <td>{formatGrid(lock.amount)}</td>;
  const lapsed = !lockBinds(lock, now);
  return (
    <td className={lapsed ? "muted" : undefined}>
      {formatGrid(lock.amount)} until #{lock.until}
      {lapsed && " (lapsed)"}
    </td>
  );
}

/** The participants, their pay and the stake each has locked for the job, with the total. */
function Participants({ job, participants, now }: { job: JobRow; participants: JobParticipantRow[]; now?: number }) {
  const flagged = participants.filter((p) => lockProblem(job, p.lock)).length;
  return (
    <section aria-labelledby="participants-title" className="card">
      <h2 id="participants-title">Participants ({participants.length})</h2>
      {participants.length === 0 ? (
        <p className="empty">No provider has joined yet.</p>
      ) : (
        <>
          <p>
            Each member&apos;s provider record locks the job&apos;s minimum provider stake,{" "}
            {formatGrid(job.spec.min_provider_stake)}, while it takes part, and through the challenge window and voting after it
            leaves or the job ends.
          </p>
          {flagged > 0 && (
            <p className="note warning" data-testid="lock-warning">
              {flagged === 1 ? "A participant lacks" : `${flagged} participants lack`} the stake lock a member of this
              job must have: the chain&apos;s invariants rule this out.
            </p>
          )}
          <div className="table-wrap">
            <table aria-labelledby="participants-title">
              <thead>
                <tr>
                  <th scope="col">Provider</th>
                  <th scope="col">From round</th>
                  <th scope="col">Rounds paid</th>
                  <th scope="col">Missed in a row</th>
                  <th scope="col">Earned</th>
                  <th scope="col">Stake locked</th>
                </tr>
              </thead>
              <tbody>
                {participants.map((p) => (
                  <tr key={p.who}>
                    <th scope="row" className="mono" title={p.who}>
                      {shortAddress(p.who)}
                    </th>
                    <td>{p.fromRound}</td>
                    <td>{p.roundsPaid}</td>
                    <td>{p.missedInRow}</td>
                    <td>{formatGrid(p.earned)}</td>
                    <StakeLockCell job={job} p={p} now={now} />
                  </tr>
                ))}
              </tbody>
              <tfoot>
                <tr>
                  <th scope="row" colSpan={5}>
                    Total stake locked for the job
                  </th>
                  <td data-testid="job-stake-locked">{formatGrid(stakeLocked(participants, now))}</td>
                </tr>
              </tfoot>
            </table>
          </div>
        </>
      )}
    </section>
  );
}

export function JobDetailView({
  detail,
  liveRounds = [],
  rpcUrl,
  canCancel,
  onCancel,
  cancelTx,
  canChallenge,
  onChallenge,
  challengeTx,
  challengeCost,
  now,
  progress,
  children,
}: JobDetailViewProps) {
  const { job, participants } = detail;
  const { spec } = job;
  const t = spec.training;
  const inner = t.inner.type === "AdamW"
    ? `AdamW, lr ${fromNanos(t.inner.value.lr)}, weight decay ${fromNanos(t.inner.value.weight_decay)}, ${t.inner.value.warmup_steps} warm-up steps`
    : `SGD, lr ${fromNanos(t.inner.value.lr)}`;
  const rounds = mergeRounds(detail.rounds, liveRounds);
  const command = fetchCommand(rpcUrl, job.id);
  return (
    <article aria-labelledby="job-title" className="job-detail">
      <div className="section-head">
        <h1 id="job-title">
          Job #{job.id.toString()} <StatusBadge status={job.status} />
        </h1>
        {canCancel && onCancel && !job.cancelRequested && (
          <button type="button" className="danger" onClick={onCancel} disabled={cancelTx?.phase === "signing" || cancelTx?.phase === "pending"}>
            Cancel job
          </button>
        )}
      </div>
      {cancelTx && <TxStatus state={cancelTx} label="Cancel" />}
      {job.cancelRequested && job.status === "Running" && (
        <p className="note" role="status">
          Cancelled by the buyer: the job ends when round {job.roundsSettled} settles; its members are paid for
          it as usual and the rest of the escrow goes back then.
        </p>
      )}

      {job.status === "Completed" && (
        <section aria-labelledby="final-title" className="card final">
          <h2 id="final-title">Final model</h2>
          {job.finalModelHash ? (
            <>
              <p>
                Hash <code className="mono break">{job.finalModelHash}</code>
              </p>
              <p>Fetch it from the participants (checked against this hash):</p>
              <pre className="command" aria-label="Fetch command">
                <code>{command}</code>
              </pre>
              <button type="button" onClick={() => void navigator.clipboard?.writeText(command)}>
                Copy command
              </button>
            </>
          ) : (
            <p>No round reached a quorum: there is no final model.</p>
          )}
        </section>
      )}

      <div className="grid-2">
        <section aria-labelledby="spec-title" className="card">
          <h2 id="spec-title">Spec</h2>
          <dl className="kv">
            <dt>Buyer</dt>
            <dd className="mono break">{job.buyer}</dd>
            <dt>Created</dt>
            <dd>block #{job.createdAt}</dd>
            <dt>Dataset</dt>
            <dd data-testid="dataset">
              <Dataset dataset={spec.dataset} />
            </dd>
            <dt>Model</dt>
            <dd>{describeModel(spec.model)}</dd>
            <dt>Initial weights</dt>
            <dd data-testid="initial-weights">
              <InitialWeights weights={spec.initial_weights} />
            </dd>
            <dt>Rounds</dt>
            <dd>
              {spec.rounds} of {blocksToText(t.round_blocks)}
            </dd>
            <dt>Batch size</dt>
            <dd>{t.batch_size}</dd>
            <dt>Inner optimizer</dt>
            <dd>{inner}</dd>
            <dt>Outer step</dt>
            <dd>
              lr {fromNanos(t.outer_lr)}, momentum {fromNanos(t.outer_momentum)}, error-feedback decay{" "}
              {fromNanos(t.error_decay)}
            </dd>
            <dt>Outer anneal</dt>
            <dd>
              {t.outer_anneal === undefined
                ? "none"
                : `to lr ${fromNanos(t.outer_anneal.to_lr)} over the last ${t.outer_anneal.rounds} rounds`}
            </dd>
            <dt>Dense rounds</dt>
            <dd>{t.dense_rounds === 0 ? "none" : `the first ${t.dense_rounds} (int8, models averaged)`}</dd>
            <dt>Overlapped steps</dt>
            <dd>{t.overlap_steps === 0 ? "none (blocking rounds)" : `${t.overlap_steps} a round`}</dd>
            <dt>Inner steps per round</dt>
            <dd>{t.max_steps === undefined ? "as many as fit" : `at most ${t.max_steps}`}</dd>
            <dt>Exchange</dt>
            <dd data-testid="exchange">
              commitments taken for {t.exchange.grace_ms} ms, updates waited for at most {t.exchange.fetch_ms} ms:{" "}
              {exchangeAllowanceMs(t.exchange)} ms of each round;{" "}
              {t.exchange.fan_in === undefined
                ? "every member's update aggregated"
                : `at most ${t.exchange.fan_in} updates aggregated a round, drawn from its seed`}
            </dd>
            <dt>Compression</dt>
            <dd>{describeCompression(t.compression)}</dd>
            <dt>Reward per round</dt>
            <dd>{formatGrid(spec.reward_per_round)}</dd>
            <dt>Providers</dt>
            <dd>
              {spec.min_providers} to {spec.max_providers}, stake at least {formatGrid(spec.min_provider_stake)}
            </dd>
            <dt>Challenge window</dt>
            <dd>{blocksToText(spec.challenge_window)}</dd>
            <dt>Who may join</dt>
            <dd data-testid="admission">
              <AdmissionRules admission={job.admission} />
            </dd>
          </dl>
        </section>

        <section aria-labelledby="escrow-title" className="card">
          <h2 id="escrow-title">Escrow</h2>
          <dl className="kv">
            <dt>Funded</dt>
            <dd>{formatGrid(job.funded)}</dd>
            <dt>Paid to providers</dt>
            <dd>{formatGrid(job.paid)}</dd>
            <dt>Protocol fees</dt>
            <dd>{formatGrid(job.fees)}</dd>
            <dt>Refunded</dt>
            <dd>{formatGrid(job.refunded)}</dd>
            <dt>Still held</dt>
            <dd>{formatGrid(job.held)}</dd>
            {job.clawedBack > 0n && (
              <>
                <dt>Clawed back (fraud)</dt>
                <dd>{formatGrid(job.clawedBack)}</dd>
              </>
            )}
          </dl>
          <h3>Progress</h3>
          <p>
            <progress max={spec.rounds} value={job.roundsSettled} aria-label="Rounds settled" /> {job.roundsSettled} of{" "}
            {spec.rounds} rounds settled
          </p>
          {job.round && (
            <p>
              Round {job.round.index} open since block #{job.round.openedAt}, deadline #{job.round.deadline};{" "}
              {job.round.attested} of {job.round.members.length} members attested
              {job.round.joiners > 0
                ? ` (${job.round.joiners} joined for this round: they count towards its quorum once they deliver)`
                : ""}
              {job.round.quorum ? `, quorum on ${shortHash(job.round.quorum)}` : ""}.
            </p>
          )}
          {job.lastResult && (
            <p>
              Latest attested model <span className="mono" title={job.lastResult}>{shortHash(job.lastResult)}</span>
            </p>
          )}
        </section>
      </div>

      {progress}

      <Participants job={job} participants={participants} now={now} />

      <section aria-labelledby="rounds-title" className="card">
        <h2 id="rounds-title">Rounds</h2>
        <RoundStrip rounds={rounds} open={job.round} now={now} />
        {rounds.length === 0 ? (
          <p className="empty">No round has settled yet.</p>
        ) : (
          <ol className="timeline">
            {rounds.map((r) => (
              <li key={r.round} className={r.resultModelHash ? "ok" : "failed"}>
                <strong>Round {r.round}</strong>{" "}
                {r.resultModelHash ? (
                  <span className="mono" title={r.resultModelHash}>
                    {shortHash(r.resultModelHash)}
                  </span>
                ) : (
                  <span>no quorum</span>
                )}
                {r.settledAt !== undefined && <span className="muted"> · settled in #{r.settledAt}</span>}
                <div className="muted">
                  {r.proofs !== undefined && `${r.proofs}/${r.members} proofs, ${r.paidParticipants} paid · `}
                  paid {formatGrid(r.paid)}, fee {formatGrid(r.fee)}, refunded {formatGrid(r.refunded)}
                </div>
                {r.rewards && r.rewards.length > 0 && (
                  <ul className="rewards">
                    {r.rewards.map((w) => (
                      <li key={w.who}>
                        <span className="mono" title={w.who}>
                          {shortAddress(w.who)}
                        </span>{" "}
                        +{formatGrid(w.amount)}
                      </li>
                    ))}
                  </ul>
                )}
              </li>
            ))}
          </ol>
        )}
      </section>
      {canChallenge && onChallenge && (
        <ChallengeContributions job={job} rounds={detail.rounds} now={now} cost={challengeCost} onChallenge={onChallenge} tx={challengeTx} />
      )}
      {children}
    </article>
  );
}
