import type { ReactNode } from "react";
import { blocksToText, shortHash } from "../lib/format";
import {
  earnings,
  formatMemory,
  formatScore,
  formatTflops,
  unbondingTotal,
  uptime,
  type ProviderEvent,
  type ProviderJobRow,
  type ProviderRow,
} from "../lib/providers";
import { formatGrid } from "../lib/units";
import { StatusBadge } from "./StatusBadge";

export interface ProviderDetailViewProps {
  provider: ProviderRow;
  /** Jobs it participates in (undefined while loading). */
  jobs?: ProviderJobRow[];
  /** Rewards and slashes seen while the page is open, newest first. */
  events?: ProviderEvent[];
  /** Best block number, to say when unbonding chunks unlock. */
  now?: number;
  /** The stake actions, when the selected account is this provider. */
  children?: ReactNode;
  /** Shown at the end (rewards and slashes over time). */
  after?: ReactNode;
}

/** A provider's record, health, jobs and live rewards / slashes. */
export function ProviderDetailView({ provider: p, jobs, events = [], now, children, after }: ProviderDetailViewProps) {
  const c = p.capabilities;
  const h = p.health;
  const up = uptime(h);
  const total = jobs && earnings(jobs);
  return (
    <article aria-labelledby="provider-title" className="provider-detail">
      <div className="section-head">
        <h1 id="provider-title">
          Provider <span className="mono break">{p.who}</span>
        </h1>
      </div>
      {children}
      <div className="grid-2">
        <section aria-labelledby="record-title" className="card">
          <h2 id="record-title">Record</h2>
          <dl className="kv">
            <dt>Stake</dt>
            <dd data-testid="provider-stake">{formatGrid(p.stake)}</dd>
            <dt>Unbonding</dt>
            <dd>
              {p.unbonding.length === 0 ? (
                "—"
              ) : (
                <>
                  {formatGrid(unbondingTotal(p))}
                  <ul className="plain">
                    {p.unbonding.map((u, i) => (
                      <li key={i}>
                        {formatGrid(u.amount)} unlocks at #{u.unlockAt}
                        {now !== undefined && (u.unlockAt <= now ? " (unlocked)" : ` (in ${blocksToText(u.unlockAt - now)})`)}
                      </li>
                    ))}
                  </ul>
                </>
              )}
            </dd>
            <dt>Hardware</dt>
            <dd>
              {c.deviceCount} × {c.deviceName} ({c.device}), {formatMemory(c.memoryMib)} each
            </dd>
            <dt>Throughput</dt>
            <dd>{formatTflops(c.tflopsMilli)}</dd>
            <dt>Bandwidth</dt>
            <dd>{c.bandwidthMbps} Mbit/s</dd>
            <dt>Region</dt>
            <dd>{c.region || "—"}</dd>
            <dt>Peer id</dt>
            <dd className="mono" title={p.peerId}>
              {shortHash(p.peerId)}
            </dd>
            <dt>Listen addresses</dt>
            <dd className="mono break">
              {p.multiaddrs.map((m) => (
                <div key={m}>{m}</div>
              ))}
            </dd>
            <dt>Endpoint</dt>
            <dd className="mono break">{p.endpoint}</dd>
            <dt>Registered</dt>
            <dd>block #{p.registeredAt}</dd>
            <dt>Active jobs</dt>
            <dd>{p.activeJobs}</dd>
          </dl>
        </section>

        <section aria-labelledby="health-title" className="card">
          <h2 id="health-title">Health</h2>
          <dl className="kv">
            <dt>Score</dt>
            <dd data-testid="provider-score">{formatScore(p.score)}</dd>
            <dt>Rounds delivered</dt>
            <dd>{h.roundsDelivered}</dd>
            <dt>Rounds missed</dt>
            <dd>{h.roundsMissed}</dd>
            <dt>Challenges lost</dt>
            <dd>{h.challengesLost}</dd>
            <dt>Probes</dt>
            <dd>
              {h.probesOk} ok, {h.probesFailed} failed
              {up !== undefined && ` (${(up * 100).toFixed(1)}% up)`}
            </dd>
            <dt>Last probe</dt>
            <dd>
              {h.lastProbe
                ? `#${h.lastProbe.at}: ${h.lastProbe.ok ? `ok, ${h.lastProbe.latencyMs} ms` : "failed"}`
                : "not probed yet"}
            </dd>
          </dl>
        </section>
      </div>

      <section aria-labelledby="provider-locks-title" className="card">
        <h2 id="provider-locks-title">Stake locked for jobs</h2>
        {p.jobLocks.length === 0 ? (
          <p className="empty">No stake locked for jobs.</p>
        ) : (
          <>
            <p>
              <span data-testid="provider-locked">{formatGrid(p.locked)}</span> of the active stake is locked now: each job
              locks its minimum provider stake while the provider takes part, and for a challenge window and voting
              period after it leaves, and while a challenge of its work in the job is open.
            </p>
            <div className="table-wrap">
              <table aria-labelledby="provider-locks-title">
                <thead>
                  <tr>
                    <th scope="col">Job</th>
                    <th scope="col">Locked</th>
                    <th scope="col">Lasts</th>
                  </tr>
                </thead>
                <tbody>
                  {p.jobLocks.map((l) => (
                    <tr key={l.job.toString()}>
                      <th scope="row">
                        <a href={`#/jobs/${l.job}`}>#{l.job.toString()}</a>
                      </th>
                      <td>{formatGrid(l.amount)}</td>
                      <td>
                        {l.until === undefined
                          ? "while a member"
                          : `until block #${l.until}${
                              now === undefined ? "" : l.until <= now ? " (lapsed)" : ` (in ${blocksToText(l.until - now)})`
                            }`}
                        {l.disputes > 0 &&
                          `, and while ${l.disputes} challenge${l.disputes === 1 ? "" : "s"} of its work ${
                            l.disputes === 1 ? "is" : "are"
                          } open`}
                      </td>
                    </tr>
                  ))}
                </tbody>
                <tfoot>
                  <tr>
                    <th scope="row">Total locked now</th>
                    <td>{formatGrid(p.locked)}</td>
                    <td />
                  </tr>
                </tfoot>
              </table>
            </div>
          </>
        )}
      </section>

      <section aria-labelledby="provider-jobs-title" className="card">
        <h2 id="provider-jobs-title">Jobs{jobs ? ` (${jobs.length})` : ""}</h2>
        {!jobs ? (
          <p aria-busy="true">Loading jobs…</p>
        ) : jobs.length === 0 ? (
          <p className="empty">Not in any job.</p>
        ) : (
          <>
            <p>
              Earned {formatGrid(total!.earned)} over {total!.roundsPaid} paid round{total!.roundsPaid === 1 ? "" : "s"}.
            </p>
            <div className="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Job</th>
                    <th scope="col">Status</th>
                    <th scope="col">Rounds settled</th>
                    <th scope="col">Joined at round</th>
                    <th scope="col">Rounds paid</th>
                    <th scope="col">Missed in a row</th>
                    <th scope="col">Earned</th>
                  </tr>
                </thead>
                <tbody>
                  {jobs.map((j) => (
                    <tr key={j.id.toString()}>
                      <th scope="row">
                        <a href={`#/jobs/${j.id}`}>#{j.id.toString()}</a>
                      </th>
                      <td>
                        <StatusBadge status={j.status} />
                      </td>
                      <td>
                        {j.roundsSettled} / {j.rounds}
                      </td>
                      <td>{j.fromRound}</td>
                      <td>{j.roundsPaid}</td>
                      <td>{j.missedInRow}</td>
                      <td>{formatGrid(j.earned)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </>
        )}
      </section>

      <section aria-labelledby="provider-events-title" className="card">
        <h2 id="provider-events-title">Rewards and slashes</h2>
        {events.length === 0 ? (
          <p className="empty">None seen since this page opened.</p>
        ) : (
          <ul className="timeline" aria-live="polite">
            {events.map((e, i) =>
              e.kind === "RewardPaid" ? (
                <li key={i}>
                  #{e.block}: +{formatGrid(e.amount)} for round {e.round} of <a href={`#/jobs/${e.job}`}>job #{e.job.toString()}</a>
                </li>
              ) : (
                <li key={i} className="failed">
                  #{e.block}: slashed {formatGrid(e.amount)} ({e.reason}), {formatGrid(e.toRecipients)} to recipients
                </li>
              ),
            )}
          </ul>
        )}
      </section>
      {after}
    </article>
  );
}
