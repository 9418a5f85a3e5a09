import { ballotText, challengePhase, OUTCOME_TEXT, phaseText, voteCounts, type ChallengeView, type CommitteeVote, type JobIncident } from "../lib/challenges";
import { shortAddress } from "../lib/format";
import { describeScan, type HistoryScan } from "../lib/history";
import { formatGrid } from "../lib/units";
import "./charts.css";

export interface ChallengesSectionProps {
  challenges: ChallengeView[];
  /** Incidents from the history scan and live blocks, oldest first. */
  incidents: JobIncident[];
  scan?: HistoryScan;
  scanning?: boolean;
  /** Why challenges could not be read from state. */
  error?: string;
  now?: number;
}

const ballotClass = (m: CommitteeVote) =>
  m.ballot === "Revealed" ? (m.verdict === "Invalid" ? "vote-invalid" : "vote-valid") : m.ballot === "Committed" ? "vote-committed" : "vote-none";

const Who = ({ who }: { who: string }) => (
  <span className="mono" title={who}>
    {shortAddress(who)}
  </span>
);

/**
 * One incident as a line of text. Draws, votes and verdicts name only the id: those of `audits`
 * read "audit #id", the rest "challenge #id".
 */
export function describeIncident(i: JobIncident, audits: ReadonlySet<bigint> = new Set()): string {
  const s = shortAddress;
  const what = (id: bigint) => `${audits.has(id) ? "audit" : "challenge"} #${id}`;
  switch (i.kind) {
    case "ChallengeOpened":
      return `challenge #${i.id} opened on round ${i.round}: ${s(i.accused)} accused by ${s(i.challenger)}, committee drawn at #${i.drawAt}, voting until #${i.deadline}`;
    case "AuditOpened":
      return `audit #${i.id} of round ${i.round}: ${s(i.accused)}'s update, judged by a committee drawn now, voting until #${i.deadline}`;
    case "CommitteeDrawn":
      return `${what(i.id)}: committee of ${i.committee.length} drawn (${i.committee.map(s).join(", ")}), committing until #${i.revealFrom}`;
    case "VoteCommitted":
      return `${what(i.id)}: ${s(i.who)} committed a hidden verdict`;
    case "Voted":
      return `${what(i.id)}: ${s(i.who)} revealed ${i.verdict}`;
    case "ChallengeResolved":
      return `${what(i.id)} on round ${i.round} decided: ${OUTCOME_TEXT[i.outcome] ?? i.outcome}; ${s(i.accused)} slashed ${formatGrid(i.slashed)}, ${formatGrid(i.clawedBack)} clawed back, ${i.absent} verifiers absent`;
    case "EquivocationPunished":
      return `round ${i.round}: ${s(i.provider)} slashed ${formatGrid(i.slashed)} for equivocation, reported by ${s(i.reporter)}`;
    case "Slashed":
      return `${s(i.who)} slashed ${formatGrid(i.amount)} (${i.reason}), ${formatGrid(i.toRecipients)} to recipients`;
  }
}

/** Where the challenger would be: the chain for an audit (it puts no deposit down). */
const AUDITOR = "audit (chain)";

const PHASE_WORD = { draw: "awaiting draw", commit: "committing", reveal: "revealing", closed: "to be decided" } as const;

function stateText(c: ChallengeView, now?: number): string {
  if (c.state === "open") return `open, ${PHASE_WORD[challengePhase(c, now).phase]}`;
  return c.outcome ? OUTCOME_TEXT[c.outcome] ?? c.outcome : "decided (outcome before the events read)";
}

/** A job's open challenges and audits with their phase and committees' ballots, every one raised, and slashes. */
export function ChallengesSection({ challenges, incidents, scan, scanning, error, now }: ChallengesSectionProps) {
  const open = challenges.filter((c) => c.state === "open");
  const audits = new Set(challenges.filter((c) => c.audit).map((c) => c.id));
  const slashes = incidents.filter((i) => i.kind === "Slashed" || i.kind === "EquivocationPunished" || i.kind === "ChallengeResolved");
  const slashTotal = incidents.reduce((t, i) => t + (i.kind === "Slashed" ? i.amount : 0n), 0n);
  return (
    <section aria-labelledby="challenges-title" className="card">
      <h2 id="challenges-title">Challenges, audits, votes and slashes</h2>
      {error && <p role="alert">Could not read the challenges: {error}</p>}

      <h3>Open challenges and audits ({open.length})</h3>
      {open.length === 0 ? (
        <p className="empty">No open challenge or audit.</p>
      ) : (
        open.map((c) => {
          const n = voteCounts(c.committee ?? []);
          const drawn = (c.committee ?? []).length > 0;
          const title = `${c.audit ? "Audit" : "Challenge"} #${c.id}`;
          return (
            <div key={c.id.toString()} className="open-challenge" role="group" aria-label={title}>
              <p>
                <strong>{title}</strong> on round {c.round}: <Who who={c.accused} /> accused by{" "}
                {c.audit ? AUDITOR : c.challenger ? <Who who={c.challenger} /> : "?"}
                {c.deposit !== undefined && `, deposit ${formatGrid(c.deposit)}`}; {phaseText(c, now)}.{" "}
                {drawn && (
                  <span className="muted">
                    {n.invalid} invalid, {n.valid} valid, {n.committed} committed (hidden), {n.pending} pending
                  </span>
                )}
              </p>
              {!drawn ? (
                <p className="empty">Committee not drawn yet (at #{c.drawAt ?? "?"}, from a block after the challenge).</p>
              ) : (
                <div className="table-wrap">
                  <table>
                    <thead>
                      <tr>
                        <th scope="col">Committee member</th>
                        <th scope="col">Ballot</th>
                      </tr>
                    </thead>
                    <tbody>
                      {(c.committee ?? []).map((m) => (
                        <tr key={m.who}>
                          <th scope="row">
                            <Who who={m.who} />
                          </th>
                          <td className={ballotClass(m)}>{ballotText(m)}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              )}
            </div>
          );
        })
      )}

      <h3>Every challenge and audit of this job ({challenges.length})</h3>
      {challenges.length === 0 ? (
        <p className="empty">No contribution of this job was ever challenged or audited.</p>
      ) : (
        <div className="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Challenge</th>
                <th scope="col">Round</th>
                <th scope="col">Accused</th>
                <th scope="col">Challenger</th>
                <th scope="col">Outcome</th>
                <th scope="col">Ballots (invalid / valid / hidden / pending)</th>
                <th scope="col">Slashed</th>
                <th scope="col">Clawed back</th>
                <th scope="col">Decided in</th>
              </tr>
            </thead>
            <tbody>
              {challenges.map((c) => {
                const n = c.committee && c.committee.length > 0 ? voteCounts(c.committee) : undefined;
                return (
                  <tr key={c.id.toString()} className={c.outcome === "FraudProven" ? "failed" : undefined}>
                    <th scope="row">#{c.id.toString()}</th>
                    <td>{c.round}</td>
                    <td>
                      <Who who={c.accused} />
                    </td>
                    <td>{c.audit ? AUDITOR : c.challenger ? <Who who={c.challenger} /> : "—"}</td>
                    <td>{stateText(c, now)}</td>
                    <td>{n ? `${n.invalid} / ${n.valid} / ${n.committed} / ${n.pending}` : "—"}</td>
                    <td>{c.slashed !== undefined ? formatGrid(c.slashed) : "—"}</td>
                    <td>{c.clawedBack !== undefined ? formatGrid(c.clawedBack) : "—"}</td>
                    <td>{c.resolvedAt !== undefined ? `#${c.resolvedAt}` : "—"}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}

      <h3>Events</h3>
      {incidents.length === 0 ? (
        <p className="empty">No challenge, audit, committee draw, vote or slash event of this job in the blocks read.</p>
      ) : (
        <>
          {slashes.length > 0 && <p>Slashed in the blocks read: {formatGrid(slashTotal)}.</p>}
          <ol className="timeline" aria-live="polite" aria-label="Challenge and slash events">
            {[...incidents].reverse().map((i, k) => (
              <li key={k} className={i.kind === "Slashed" || i.kind === "EquivocationPunished" ? "failed" : undefined}>
                #{i.block} {i.kind}: {describeIncident(i, audits)}
              </li>
            ))}
          </ol>
        </>
      )}
      <p className="muted scan-note" aria-live="polite">
        {scanning ? "Reading past blocks…" : scan ? `${describeScan(scan)} New blocks are added as they are finalized.` : "Events of new finalized blocks are added as they come."}
      </p>
    </section>
  );
}
