// The rounds of a job at a glance: one bar per settled round (height: proofs / members; green
// when a quorum was reached, red when not) and the open round, dashed, filled to its
// attestations so far. The rounds list under it is its text equivalent.
import type { OpenRound, RoundRow } from "../lib/jobs";
import { formatGrid } from "../lib/units";
import "./charts.css";

export interface RoundStripProps {
  rounds: RoundRow[];
  open?: OpenRound;
  /** Best block number, to say how long the open round has left. */
  now?: number;
}

const H = 90;
const TOP = 6;
const BAR_H = 60;

/** One bar's description (also its tooltip). */
export function describeRound(r: RoundRow): string {
  const quorum = r.resultModelHash ? "quorum reached" : "no quorum";
  const proofs = r.proofs !== undefined && r.members !== undefined ? `, ${r.proofs}/${r.members} proofs` : "";
  const settled = r.settledAt !== undefined ? `, settled in #${r.settledAt}` : "";
  return `Round ${r.round}: ${quorum}${proofs}, paid ${formatGrid(r.paid)}, fee ${formatGrid(r.fee)}, refunded ${formatGrid(r.refunded)}${settled}`;
}

export function describeOpenRound(open: OpenRound, now?: number): string {
  const left = now === undefined ? "" : open.deadline >= now ? ` (${open.deadline - now} blocks left)` : " (past its deadline, settling)";
  return `Round ${open.index} open since #${open.openedAt}, deadline #${open.deadline}${left}: ${open.attested} of ${open.members.length} members attested`;
}

export function RoundStrip({ rounds, open, now }: RoundStripProps) {
  const cells: { key: string; label: string; kind: "ok" | "failed" | "open"; fill: number; round: number }[] = rounds.map((r) => ({
    key: `r${r.round}`,
    label: describeRound(r),
    kind: r.resultModelHash ? "ok" : "failed",
    fill: r.members ? Math.min(1, (r.proofs ?? 0) / r.members) : r.resultModelHash ? 1 : 0,
    round: r.round,
  }));
  if (open && !rounds.some((r) => r.round === open.index))
    cells.push({
      key: "open",
      label: describeOpenRound(open, now),
      kind: "open",
      fill: open.members.length ? Math.min(1, open.attested / open.members.length) : 0,
      round: open.index,
    });
  if (cells.length === 0) return null;
  const slot = 16;
  const W = Math.max(320, cells.length * slot + 8);
  const bw = Math.max(4, Math.min(12, slot - 4));
  const every = Math.ceil(cells.length / 16);
  const failed = rounds.filter((r) => !r.resultModelHash).length;
  return (
    <figure className="chart">
      <svg
        viewBox={`0 0 ${W} ${H}`}
        className="round-strip"
        role="img"
        aria-label={`Rounds at a glance: ${rounds.length} settled, ${rounds.length - failed} with a quorum, ${failed} without${open ? `; ${describeOpenRound(open, now)}` : ""}`}
      >
        {cells.map((c, i) => {
          const x = 4 + i * slot;
          const h = Math.max(2, c.fill * BAR_H);
          return (
            <g key={c.key} data-round={c.round} data-kind={c.kind}>
              <title>{c.label}</title>
              <rect className="track" x={x} y={TOP} width={bw} height={BAR_H} />
              {c.kind === "open" ? (
                <>
                  <rect className="open-fill" x={x} y={TOP + BAR_H - h} width={bw} height={h} />
                  <rect className="open" x={x} y={TOP} width={bw} height={BAR_H} />
                </>
              ) : (
                <rect className={c.kind} x={x} y={TOP + BAR_H - h} width={bw} height={h} />
              )}
              {(i % every === 0 || i === cells.length - 1) && (
                <text x={x + bw / 2} y={TOP + BAR_H + 16} textAnchor="middle">
                  {c.round}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      <figcaption>
        <p className="strip-key">
          <span>
            <span className="swatch ok" aria-hidden="true" />
            quorum reached
          </span>
          <span>
            <span className="swatch failed" aria-hidden="true" />
            no quorum
          </span>
          {open && (
            <span>
              <span className="swatch open" aria-hidden="true" />
              open round
            </span>
          )}
          <span className="muted">bar height: proofs / members; x: round</span>
        </p>
        {open && <p>{describeOpenRound(open, now)}.</p>}
      </figcaption>
    </figure>
  );
}
