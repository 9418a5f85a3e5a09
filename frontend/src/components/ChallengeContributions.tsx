import { blocksToText, shortAddress } from "../lib/format";
import { canChallenge, contributionsInWindow, type JobRow, type RoundRow } from "../lib/jobs";
import type { TxState } from "../lib/tx";
import { formatGrid } from "../lib/units";
import { TxStatus } from "./TxStatus";

/** A challenge transaction and the contribution it disputes. */
export interface ChallengeTx {
  state: TxState;
  round: number;
  provider: string;
}

export interface ChallengeContributionsProps {
  job: JobRow;
  /** Rounds read from state (only those still in their window carry contributions). */
  rounds: readonly RoundRow[];
  /** Best block number; nothing is offered while it is unknown. */
  now?: number;
  /** `ChallengeDeposit` and `ChallengeFee`, when read. */
  cost?: { deposit: bigint; fee: bigint };
  onChallenge: (round: number, provider: string) => void;
  tx?: ChallengeTx;
}

/**
 * The buyer's challenges (`Jobs.challenge`): each contribution of a round whose challenge
 * window is still open, with a Challenge button unless it is already disputed (or the buyer's
 * own, as a member of its own job), what a challenge costs, and the transaction's progress.
 */
export function ChallengeContributions({ job, rounds, now, cost, onChallenge, tx }: ChallengeContributionsProps) {
  const window = job.spec.challenge_window;
  const open = contributionsInWindow(rounds, window, now);
  const busy = tx?.state.phase === "signing" || tx?.state.phase === "pending";
  const deposit = cost ? formatGrid(cost.deposit) : "the challenge deposit";
  const fee = cost ? formatGrid(cost.fee) : "the challenge fee";
  return (
    <section aria-labelledby="challenge-title" className="card">
      <h2 id="challenge-title">Challenge a contribution</h2>
      <p>
        As the buyer you may dispute a provider&apos;s contribution to a settled round until that round&apos;s
        challenge window ({blocksToText(window)} after it settled) closes: a committee drawn from the job&apos;s
        other members re-executes the update and votes.
      </p>
      <p className="note" data-testid="challenge-cost">
        A challenge puts a deposit of {deposit} on hold until the committee decides, and pays a fee of {fee} that is
        not refunded. If the committee finds the work valid, the deposit goes to the members that voted so:
        challenging valid work costs the deposit as well as the fee. If it proves fraud, the deposit comes back, the
        provider&apos;s reward for the round is clawed back to you and its stake is slashed.
      </p>
      {window === 0 ? (
        <p className="empty">This job has no challenge window: its contributions cannot be challenged.</p>
      ) : now === undefined ? (
        <p className="empty">Waiting for the best block to tell which rounds are still in their window…</p>
      ) : open.length === 0 ? (
        <p className="empty">No contribution is open to a challenge: no settled round is still in its window.</p>
      ) : (
        <div className="table-wrap">
          <table aria-labelledby="challenge-title">
            <thead>
              <tr>
                <th scope="col">Round</th>
                <th scope="col">Provider</th>
                <th scope="col">Reward</th>
                <th scope="col">Window closes</th>
                <th scope="col">Challenge</th>
              </tr>
            </thead>
            <tbody>
              {open.map((c) => (
                <tr key={`${c.round}:${c.who}`} data-testid={`contribution-${c.round}-${c.who}`}>
                  <td>{c.round}</td>
                  <th scope="row" className="mono" title={c.who}>
                    {shortAddress(c.who)}
                  </th>
                  <td>{c.reward > 0n ? formatGrid(c.reward) : "unpaid (claims another member's update)"}</td>
                  <td>
                    #{c.closes} ({c.closes - now} block{c.closes - now === 1 ? "" : "s"} left)
                  </td>
                  <td>
                    {c.challenged !== undefined ? (
                      <span className="muted">challenged (#{c.challenged.toString()})</span>
                    ) : !canChallenge(c, job.buyer) ? (
                      <span className="muted">your own</span>
                    ) : (
                      <button
                        type="button"
                        className="danger"
                        aria-label={`Challenge round ${c.round} by ${c.who}`}
                        title={`Holds ${deposit} until the committee decides; pays ${fee}, not refunded`}
                        disabled={busy}
                        onClick={() => onChallenge(c.round, c.who)}
                      >
                        Challenge
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {tx && <TxStatus state={tx.state} label={`Challenge of round ${tx.round} by ${shortAddress(tx.provider)}`} />}
    </section>
  );
}
