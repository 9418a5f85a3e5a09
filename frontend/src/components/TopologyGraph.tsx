import { formatScore } from "../lib/providers";
import { circleLayout, edgeWidth, formatMbit, formatRtt, type NodeState, type Topology } from "../lib/topology";

const WIDTH = 680;
const HEIGHT = 420;
const RADIUS = 150;
const NODE_R = 11;

const STATE_TEXT: Record<NodeState, string> = {
  good: "answering, health score ≥ 0.8",
  fair: "answering, health score 0.5–0.8",
  poor: "answering, health score < 0.5",
  unreachable: "trainer unreachable",
  pending: "not read yet",
  unknown: "peer not registered as a provider",
};

/**
 * The trainers' peer graph: providers (and unknown peers) on a circle, a line where a trainer
 * reports a peer, as thick as the throughput; nodes coloured by reachability and health score.
 * A list of the links follows as its text equivalent.
 */
export function TopologyGraph({ topology }: { topology: Topology }) {
  const { nodes, edges } = topology;
  const at = circleLayout(nodes.length, WIDTH / 2, HEIGHT / 2, nodes.length === 1 ? 0 : RADIUS);
  const pos = new Map(nodes.map((n, i) => [n.id, at[i]!]));
  const label = new Map(nodes.map((n) => [n.id, n.label]));
  const maxThroughput = Math.max(0, ...edges.map((e) => e.throughputMbit ?? 0));
  const linkText = (e: Topology["edges"][number]) =>
    `${label.get(e.a)} — ${label.get(e.b)}: round trip ${formatRtt(e.rttMs)}, throughput ${formatMbit(e.throughputMbit)}` +
    (e.reports === 2 ? " (both report)" : "");
  return (
    <section aria-labelledby="topology-title" className="card">
      <h2 id="topology-title">Topology</h2>
      <div className="topology">
        <svg
          viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
          role="img"
          aria-labelledby="topology-svg-title"
          aria-describedby="topology-svg-desc"
          className="topology-graph"
        >
          <title id="topology-svg-title">Peer graph of the trainers</title>
          <desc id="topology-svg-desc">
            {nodes.length} node{nodes.length === 1 ? "" : "s"} and {edges.length} link{edges.length === 1 ? "" : "s"}; the
            list below the picture gives each link.
          </desc>
          <g className="edges">
            {edges.map((e) => {
              const a = pos.get(e.a)!;
              const b = pos.get(e.b)!;
              return (
                <line
                  key={`${e.a}|${e.b}`}
                  x1={a.x}
                  y1={a.y}
                  x2={b.x}
                  y2={b.y}
                  className={`edge${e.throughputMbit === undefined ? " edge-unmeasured" : ""}`}
                  strokeWidth={edgeWidth(e.throughputMbit, maxThroughput)}
                  data-testid="edge"
                >
                  <title>{linkText(e)}</title>
                </line>
              );
            })}
          </g>
          <g className="nodes">
            {nodes.map((n) => {
              const p = pos.get(n.id)!;
              const dx = p.x - WIDTH / 2;
              const dy = p.y - HEIGHT / 2;
              const len = Math.hypot(dx, dy) || 1;
              const lx = nodes.length === 1 ? p.x : p.x + (dx / len) * (NODE_R + 8);
              const ly = nodes.length === 1 ? p.y + NODE_R + 14 : p.y + (dy / len) * (NODE_R + 8) + 4;
              const anchor = nodes.length === 1 || Math.abs(dx) < 20 ? "middle" : dx > 0 ? "start" : "end";
              const textY = nodes.length > 1 && Math.abs(dx) < 20 ? (dy < 0 ? ly - 4 : ly + 8) : ly;
              return (
                <g key={n.id} className={`node node-${n.state}`} data-testid="node" data-state={n.state}>
                  <title>
                    {`${n.who ?? "unknown peer"} (${n.peer}): ${STATE_TEXT[n.state]}` +
                      (n.score !== undefined ? `, chain health score ${formatScore(n.score)}` : "") +
                      (n.error ? ` — ${n.error}` : "")}
                  </title>
                  <circle cx={p.x} cy={p.y} r={NODE_R} />
                  <text x={lx} y={textY} textAnchor={anchor} className="node-label">
                    {n.label}
                  </text>
                </g>
              );
            })}
          </g>
        </svg>
        <ul className="legend" aria-label="Node colours">
          {(["good", "fair", "poor", "unreachable", "unknown"] as const).map((s) => (
            <li key={s}>
              <svg width="14" height="14" aria-hidden="true" focusable="false" className={`node node-${s}`}>
                <circle cx="7" cy="7" r="6" />
              </svg>{" "}
              {STATE_TEXT[s]}
            </li>
          ))}
          <li>line width: throughput</li>
        </ul>
      </div>
      <h3 id="links-title">Links</h3>
      {edges.length === 0 ? (
        <p className="empty">No trainer reports a peer yet.</p>
      ) : (
        <ul className="plain links" aria-labelledby="links-title">
          {edges.map((e) => (
            <li key={`${e.a}|${e.b}`}>{linkText(e)}</li>
          ))}
        </ul>
      )}
    </section>
  );
}
