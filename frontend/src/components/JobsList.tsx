import { useState } from "react";
import { shortAddress } from "../lib/format";
import { JOB_STATUSES, type JobRow, type JobStatusName } from "../lib/jobs";
import { describeModel } from "../lib/spec";
import { formatGrid } from "../lib/units";
import { StatusBadge } from "./StatusBadge";

export type StatusFilter = JobStatusName | "All";

export interface JobsListProps {
  jobs: JobRow[];
  initialFilter?: StatusFilter;
}

/** Jobs with their status, buyer, progress, participants and escrow; filterable by status. */
export function JobsList({ jobs, initialFilter = "All" }: JobsListProps) {
  const [filter, setFilter] = useState<StatusFilter>(initialFilter);
  const count = (s: StatusFilter) => (s === "All" ? jobs.length : jobs.filter((j) => j.status === s).length);
  const shown = filter === "All" ? jobs : jobs.filter((j) => j.status === filter);
  return (
    <section aria-labelledby="jobs-title">
      <div className="section-head">
        <h1 id="jobs-title">Jobs</h1>
        <div className="filter">
          <label htmlFor="status-filter">Status</label>
          <select id="status-filter" value={filter} onChange={(e) => setFilter(e.target.value as StatusFilter)}>
            {(["All", ...JOB_STATUSES] as StatusFilter[]).map((s) => (
              <option key={s} value={s}>
                {s} ({count(s)})
              </option>
            ))}
          </select>
        </div>
      </div>
      {shown.length === 0 ? (
        <p className="empty">{jobs.length === 0 ? "No jobs on this chain yet." : `No ${filter.toLowerCase()} jobs.`}</p>
      ) : (
        <div className="table-wrap">
          <table className="jobs">
            <caption className="visually-hidden">
              {shown.length} job{shown.length === 1 ? "" : "s"}
              {filter === "All" ? "" : `, ${filter.toLowerCase()}`}
            </caption>
            <thead>
              <tr>
                <th scope="col">Job</th>
                <th scope="col">Status</th>
                <th scope="col">Model</th>
                <th scope="col">Buyer</th>
                <th scope="col">Rounds</th>
                <th scope="col">Participants</th>
                <th scope="col">Escrow paid / held</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((j) => (
                <tr key={j.id.toString()}>
                  <th scope="row">
                    <a href={`#/jobs/${j.id}`}>#{j.id.toString()}</a>
                  </th>
                  <td>
                    <StatusBadge status={j.status} />
                  </td>
                  <td>{describeModel(j.spec.model)}</td>
                  <td className="mono" title={j.buyer}>
                    {shortAddress(j.buyer)}
                  </td>
                  <td>
                    <progress max={j.spec.rounds} value={j.roundsSettled} aria-hidden="true" />{" "}
                    {j.roundsSettled} / {j.spec.rounds}
                  </td>
                  <td>
                    {j.participants} ({j.spec.min_providers}–{j.spec.max_providers})
                  </td>
                  <td>
                    {formatGrid(j.paid)} / {formatGrid(j.held)}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
