// A small hand-written SVG line chart: numeric x and y, several series with a legend, and the
// same numbers as a table for screen readers and copying.
import { useId } from "react";
import "./charts.css";

export interface ChartSeries {
  id: string;
  label: string;
  /** Legend's second line: where the numbers come from. */
  source?: string;
  color: string;
  dashed?: boolean;
  /** Steps (a running total) rather than straight segments. */
  step?: boolean;
  points: { x: number; y: number }[];
}

export interface LineChartProps {
  /** What the chart shows (its accessible name). */
  title: string;
  series: ChartSeries[];
  xLabel: string;
  yLabel: string;
  formatX?: (x: number) => string;
  formatY?: (y: number) => string;
  /** Start the y axis at zero (totals) rather than at the data's minimum (losses). */
  zeroBased?: boolean;
  /** Summary of the data table (its caption). */
  tableCaption?: string;
}

/** Up to `count` + 1 round tick values covering [min, max]. */
export function niceTicks(min: number, max: number, count = 5): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [];
  if (min === max) return [min];
  const raw = (max - min) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const norm = raw / mag;
  const step = (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * mag;
  const ticks: number[] = [];
  for (let v = Math.ceil(min / step) * step; v <= max + step * 1e-9; v += step) ticks.push(Number(v.toPrecision(12)));
  return ticks;
}

/** The drawing range: data bounds, padded so that lines do not touch the frame. */
export function domain(values: number[], zeroBased = false): [number, number] {
  if (values.length === 0) return [0, 1];
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  if (zeroBased) lo = Math.min(0, lo);
  if (lo === hi) {
    const pad = Math.abs(lo) * 0.1 || 1;
    return [zeroBased ? Math.min(0, lo - pad) : lo - pad, hi + pad];
  }
  const pad = (hi - lo) * 0.05;
  return [zeroBased && lo === 0 ? 0 : lo - pad, hi + pad];
}

const W = 640;
const H = 260;
const M = { left: 58, right: 16, top: 12, bottom: 40 };

const plain = (v: number) => String(Number(v.toPrecision(6)));

export function LineChart({ title, series, xLabel, yLabel, formatX = plain, formatY = plain, zeroBased, tableCaption }: LineChartProps) {
  const descId = useId();
  const all = series.flatMap((s) => s.points);
  const [x0, x1] = domain(all.map((p) => p.x));
  const [y0, y1] = domain(all.map((p) => p.y), zeroBased);
  const pw = W - M.left - M.right;
  const ph = H - M.top - M.bottom;
  const sx = (x: number) => M.left + ((x - x0) / (x1 - x0)) * pw;
  const sy = (y: number) => M.top + ph - ((y - y0) / (y1 - y0)) * ph;
  // Rounds and blocks are whole numbers: no "round 0.4" tick.
  const integral = all.every((p) => Number.isInteger(p.x));
  const xTicks = niceTicks(x0, x1, 6).filter((t) => t >= x0 && t <= x1 && (!integral || Number.isInteger(t)));
  const yTicks = niceTicks(y0, y1, 5).filter((t) => t >= y0 && t <= y1);
  const path = (s: ChartSeries) =>
    s.points
      .map((p, i) => {
        const X = sx(p.x).toFixed(1);
        const Y = sy(p.y).toFixed(1);
        if (i === 0) return `M${X},${Y}`;
        return s.step ? `H${X}V${Y}` : `L${X},${Y}`;
      })
      .join("");
  const xs = [...new Set(all.map((p) => p.x))].sort((a, b) => a - b);
  const summary = series
    .map((s) => {
      const last = s.points[s.points.length - 1];
      return last ? `${s.label}: ${s.points.length} points, last ${formatY(last.y)} at ${xLabel} ${formatX(last.x)}` : `${s.label}: no points`;
    })
    .join("; ");
  return (
    <figure className="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={title} aria-describedby={descId} className="chart-svg">
        <g className="chart-grid" aria-hidden="true">
          {yTicks.map((t) => (
            <g key={`y${t}`}>
              <line x1={M.left} x2={W - M.right} y1={sy(t)} y2={sy(t)} />
              <text x={M.left - 6} y={sy(t)} dy="0.32em" textAnchor="end">
                {formatY(t)}
              </text>
            </g>
          ))}
          {xTicks.map((t) => (
            <text key={`x${t}`} x={sx(t)} y={H - M.bottom + 16} textAnchor="middle">
              {formatX(t)}
            </text>
          ))}
          <line className="chart-axis" x1={M.left} x2={W - M.right} y1={M.top + ph} y2={M.top + ph} />
          <line className="chart-axis" x1={M.left} x2={M.left} y1={M.top} y2={M.top + ph} />
          <text x={M.left + pw / 2} y={H - 4} textAnchor="middle" className="chart-label">
            {xLabel}
          </text>
          <text transform={`translate(12 ${M.top + ph / 2}) rotate(-90)`} textAnchor="middle" className="chart-label">
            {yLabel}
          </text>
        </g>
        {series.map((s) => (
          <g key={s.id} aria-hidden="true" data-series={s.id}>
            {s.points.length > 1 && (
              <path d={path(s)} fill="none" stroke={s.color} strokeWidth={2} strokeDasharray={s.dashed ? "6 4" : undefined} />
            )}
            {s.points.length <= 80 &&
              s.points.map((p) => (
                <circle key={p.x} cx={sx(p.x)} cy={sy(p.y)} r={s.points.length === 1 ? 4 : 2.5} fill={s.color}>
                  <title>{`${s.label}: ${formatY(p.y)} at ${xLabel} ${formatX(p.x)}`}</title>
                </circle>
              ))}
          </g>
        ))}
      </svg>
      <figcaption>
        <p id={descId} className="visually-hidden">
          {summary}
        </p>
        <ul className="legend" aria-label="Legend">
          {series.map((s) => (
            <li key={s.id}>
              <svg width="28" height="10" aria-hidden="true">
                <line x1="1" x2="27" y1="5" y2="5" stroke={s.color} strokeWidth="3" strokeDasharray={s.dashed ? "5 3" : undefined} />
              </svg>
              <span>
                {s.label}
                {s.source && <span className="muted"> · {s.source}</span>}
              </span>
            </li>
          ))}
        </ul>
        <details className="chart-table">
          <summary>Data table</summary>
          <div className="table-wrap">
            <table>
              {tableCaption && <caption>{tableCaption}</caption>}
              <thead>
                <tr>
                  <th scope="col">{xLabel}</th>
                  {series.map((s) => (
                    <th scope="col" key={s.id}>
                      {s.label}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {xs.map((x) => (
                  <tr key={x}>
                    <th scope="row">{formatX(x)}</th>
                    {series.map((s) => {
                      const p = s.points.find((q) => q.x === x);
                      return <td key={s.id}>{p ? formatY(p.y) : "—"}</td>;
                    })}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </details>
      </figcaption>
    </figure>
  );
}

/** Distinct colors readable on white (and by most color-blind readers, with the dashes). */
export const PALETTE = ["#1d4ed8", "#c2410c", "#15803d", "#7e22ce", "#0e7490", "#a16207", "#be185d", "#4d7c0f"];
