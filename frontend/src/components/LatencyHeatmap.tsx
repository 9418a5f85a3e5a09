import { formatMbit, formatRtt, rttBand, rttBandLabels, type LatencyMatrix, type PeerColumn } from "../lib/topology";
import type { TrainerPeer } from "../lib/trainer";

function PeerHeader({ column }: { column: PeerColumn }) {
  return (
    <th scope="col" className="mono" title={column.who ? `${column.who}\n${column.peer}` : `${column.peer} (not a registered provider)`}>
      {column.who ? <a href={`#/providers/${column.who}`}>{column.label}</a> : <span className="muted">{column.label}</span>}
    </th>
  );
}

const cellTitle = (from: string, to: string, p: TrainerPeer | undefined) =>
  p
    ? `${from} → ${to}: round trip ${formatRtt(p.rtt_ms)}, throughput ${formatMbit(p.throughput_mbit)}, peer score ${p.score.toFixed(2)}`
    : `${from} does not report ${to}`;

/** The latency matrix: a row per reporting trainer, a column per peer, cells coloured by round-trip time. */
export function LatencyHeatmap({ matrix }: { matrix: LatencyMatrix }) {
  const { rows, columns } = matrix;
  const labels = rttBandLabels();
  return (
    <section aria-labelledby="heatmap-title" className="card">
      <h2 id="heatmap-title">Latency between trainers</h2>
      {columns.length === 0 ? (
        <p className="empty">The trainers that answered report no peers yet.</p>
      ) : (
        <>
          <div className="table-wrap">
            <table className="heatmap">
              <caption className="visually-hidden">
                Round-trip time each trainer reports to each peer: {rows.length} trainer{rows.length === 1 ? "" : "s"} (rows)
                by {columns.length} peer{columns.length === 1 ? "" : "s"} (columns)
              </caption>
              <thead>
                <tr>
                  <th scope="col">
                    Trainer <span aria-hidden="true">↓</span> / peer <span aria-hidden="true">→</span>
                  </th>
                  {columns.map((c) => (
                    <PeerHeader key={c.peer} column={c} />
                  ))}
                </tr>
              </thead>
              <tbody>
                {rows.map((r) => (
                  <tr key={r.who}>
                    <th scope="row" className="mono">
                      <a href={`#/providers/${r.who}`} title={`${r.who}\n${r.peer}`}>
                        {r.label}
                      </a>
                    </th>
                    {r.cells.map((p, i) => {
                      const band = rttBand(p?.rtt_ms);
                      return (
                        <td
                          key={columns[i]!.peer}
                          className={`rtt ${band === undefined ? "rtt-none" : `rtt-${band}`}`}
                          title={cellTitle(r.label, columns[i]!.label, p)}
                          data-testid={`rtt-${r.who}-${columns[i]!.peer}`}
                        >
                          {p ? (
                            formatRtt(p.rtt_ms)
                          ) : (
                            <>
                              <span aria-hidden="true">·</span>
                              <span className="visually-hidden">not reported</span>
                            </>
                          )}
                        </td>
                      );
                    })}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <ul className="legend" aria-label="Round-trip time colours">
            {labels.map((label, band) => (
              <li key={label}>
                <span className={`swatch rtt-${band}`} aria-hidden="true" /> {label}
              </li>
            ))}
            <li>
              <span className="swatch rtt-none" aria-hidden="true" /> not measured
            </li>
          </ul>
        </>
      )}
    </section>
  );
}
