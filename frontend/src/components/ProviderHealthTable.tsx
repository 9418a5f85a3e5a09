import { providerStatus, sortProviders, type ProviderRow } from "../lib/providers";
import { formatGrid } from "../lib/units";
import { ProviderCell } from "./ProviderCell";
import { ScoreBar } from "./ScoreBar";

/** Every registered provider's health, best score first. */
export function ProviderHealthTable({ providers }: { providers: ProviderRow[] }) {
  const shown = sortProviders(providers, "score");
  return (
    <section aria-labelledby="health-table-title" className="card">
      <h2 id="health-table-title">Provider health</h2>
      {shown.length === 0 ? (
        <p className="empty">No providers registered on this chain yet.</p>
      ) : (
        <div className="table-wrap">
          <table className="health">
            <caption className="visually-hidden">
              {shown.length} provider{shown.length === 1 ? "" : "s"}, by health score
            </caption>
            <thead>
              <tr>
                <th scope="col">Account</th>
                <th scope="col">Status</th>
                <th scope="col">Stake</th>
                <th scope="col">Rounds delivered / missed</th>
                <th scope="col">Challenges lost</th>
                <th scope="col">Probes ok / failed</th>
                <th scope="col">Health score</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((p) => {
                const h = p.health;
                return (
                  <tr key={p.who}>
                    <ProviderCell who={p.who} />
                    <td>{providerStatus(p)}</td>
                    <td>{formatGrid(p.stake)}</td>
                    <td>
                      {h.roundsDelivered} / {h.roundsMissed}
                    </td>
                    <td>{h.challengesLost}</td>
                    <td>
                      {h.probesOk} / {h.probesFailed}
                    </td>
                    <td data-testid="score">
                      <ScoreBar score={p.score} />
                    </td>
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
