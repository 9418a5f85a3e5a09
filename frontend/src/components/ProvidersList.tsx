import { useState, type ReactNode } from "react";
import { ProviderCell } from "./ProviderCell";
import {
  formatMemory,
  formatScore,
  formatTflops,
  PROVIDER_SORT_KEYS,
  sortProviders,
  unbondingTotal,
  type ProviderRow,
  type ProviderSortKey,
} from "../lib/providers";
import { formatGrid } from "../lib/units";

export interface ProvidersListProps {
  providers: ProviderRow[];
  initialSort?: ProviderSortKey;
  /** Links beside the heading (registering). */
  actions?: ReactNode;
}

/** Registered providers with stake, unbonding, declared hardware, health score and endpoint. */
export function ProvidersList({ providers, initialSort = "stake", actions }: ProvidersListProps) {
  const [sort, setSort] = useState<ProviderSortKey>(initialSort);
  const shown = sortProviders(providers, sort);
  return (
    <section aria-labelledby="providers-title">
      <div className="section-head">
        <h1 id="providers-title">Providers</h1>
        {actions && <div className="head-actions">{actions}</div>}
        <div className="filter">
          <label htmlFor="provider-sort">Order by</label>
          <select id="provider-sort" value={sort} onChange={(e) => setSort(e.target.value as ProviderSortKey)}>
            {PROVIDER_SORT_KEYS.map(({ key, label }) => (
              <option key={key} value={key}>
                {label}
              </option>
            ))}
          </select>
        </div>
      </div>
      {shown.length === 0 ? (
        <p className="empty">No providers registered on this chain yet.</p>
      ) : (
        <div className="table-wrap">
          <table className="providers">
            <caption className="visually-hidden">
              {shown.length} provider{shown.length === 1 ? "" : "s"}, by {PROVIDER_SORT_KEYS.find((k) => k.key === sort)!.label.toLowerCase()}
            </caption>
            <thead>
              <tr>
                <th scope="col">Account</th>
                <th scope="col">Stake</th>
                <th scope="col">Unbonding</th>
                <th scope="col">TFLOP/s</th>
                <th scope="col">Hardware</th>
                <th scope="col">Region</th>
                <th scope="col">Health score</th>
                <th scope="col">Jobs</th>
                <th scope="col">Endpoint</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((p) => {
                const c = p.capabilities;
                const unbonding = unbondingTotal(p);
                return (
                  <tr key={p.who}>
                    <ProviderCell who={p.who} />
                    <td data-testid="stake">{formatGrid(p.stake)}</td>
                    <td>{unbonding > 0n ? formatGrid(unbonding) : "—"}</td>
                    <td>{formatTflops(c.tflopsMilli)}</td>
                    <td>
                      {c.deviceCount} × {c.deviceName} ({c.device}, {formatMemory(c.memoryMib)}), {c.bandwidthMbps} Mbit/s
                    </td>
                    <td>{c.region || "—"}</td>
                    <td>{formatScore(p.score)}</td>
                    <td>{p.activeJobs}</td>
                    <td className="mono break">{p.endpoint}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
