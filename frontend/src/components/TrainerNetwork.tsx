import type { ProviderRow } from "../lib/providers";
import { formatRtt, latencyMatrix, shortPeer, topology, type TrainerReport } from "../lib/topology";
import { ProviderCell } from "./ProviderCell";
import { LatencyHeatmap } from "./LatencyHeatmap";
import { TopologyGraph } from "./TopologyGraph";

export interface TrainerNetworkProps {
  providers: ProviderRow[];
  /** The latest poll of every provider's trainer; undefined before the first answers. */
  reports?: TrainerReport[];
  /** Seconds between polls, to say so. */
  everySeconds?: number;
}

/** What the trainers report about each other: who answered, the latency matrix and the peer graph. */
export function TrainerNetwork({ providers, reports, everySeconds = 5 }: TrainerNetworkProps) {
  if (providers.length === 0) return null;
  const answered = reports?.filter((r) => r.status) ?? [];
  return (
    <>
      <section aria-labelledby="trainers-title" className="card">
        <h2 id="trainers-title">Trainers</h2>
        <p className="muted">
          Each provider's trainer is asked for <code>/status</code> on its registered endpoint every {everySeconds} s, from
          this browser.
        </p>
        {!reports ? (
          <p aria-busy="true">Reading the trainers' status…</p>
        ) : (
          <>
            <p role="status" data-testid="trainers-summary">
              {answered.length} of {reports.length} trainer{reports.length === 1 ? "" : "s"} answered.
            </p>
            {answered.length === 0 && (
              <p className="empty" data-testid="trainers-empty">
                No trainer could be read. Trainers' status endpoints are read from the browser, so they must be reachable
                from it: the registered endpoint's host and port open to this machine (not 127.0.0.1 of another one), and
                http endpoints are blocked on an https page.
              </p>
            )}
            <div className="table-wrap">
              <table className="trainers">
                <caption className="visually-hidden">Trainers and whether they answered</caption>
                <thead>
                  <tr>
                    <th scope="col">Provider</th>
                    <th scope="col">Trainer</th>
                    <th scope="col">State</th>
                  </tr>
                </thead>
                <tbody>
                  {reports.map((r) => (
                    <tr key={r.who} className={r.status ? undefined : "unreachable"}>
                      <ProviderCell who={r.who} />
                      <td className="mono break">
                        {r.status ? <span title={r.status.peer_id}>{r.status.name || shortPeer(r.status.peer_id)}</span> : r.endpoint}
                      </td>
                      <td>
                        {r.status ? (
                          <>
                            answering: job #{r.status.job}
                            {r.status.round !== undefined && r.status.round !== null ? `, round ${r.status.round}` : ""},{" "}
                            {r.status.peers.length} peer{r.status.peers.length === 1 ? "" : "s"}, median round trip{" "}
                            {formatRtt(r.status.median_rtt_ms)}
                          </>
                        ) : (
                          <span className="error">unreachable: {r.error}</span>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </>
        )}
      </section>
      {answered.length > 0 && (
        <>
          <LatencyHeatmap matrix={latencyMatrix(providers, answered)} />
          <TopologyGraph topology={topology(providers, reports!)} />
        </>
      )}
    </>
  );
}
