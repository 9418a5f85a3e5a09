import { describeScan, type HistoryScan } from "../lib/history";
import { rewardPoints, slashPoints, type RewardEntry, type SlashEntry } from "../lib/rewards";
import { formatGrid, UNIT } from "../lib/units";
import { LineChart, type ChartSeries } from "./LineChart";
import "./charts.css";

export interface EarningsChartProps {
  /** Paid contributions (undefined while loading). */
  rewards?: RewardEntry[];
  slashes: SlashEntry[];
  scan?: HistoryScan;
  scanning?: boolean;
  error?: string;
}

const toGrid = (v: bigint) => Number(v) / Number(UNIT);
const gridTick = (y: number) => String(Number(y.toPrecision(4)));

/** A provider's cumulative rewards and slashes by block. */
export function EarningsChart({ rewards, slashes, scan, scanning, error }: EarningsChartProps) {
  const r = rewardPoints(rewards ?? []);
  const s = slashPoints(slashes);
  const series: ChartSeries[] = [];
  if (r.length)
    series.push({
      id: "rewards",
      label: "rewards, cumulative",
      source: "Jobs.Contributions at each round's settlement (complete)",
      color: "#15803d",
      step: true,
      points: r.map((p) => ({ x: p.block, y: toGrid(p.total) })),
    });
  if (s.length)
    series.push({
      id: "slashes",
      label: "slashes, cumulative",
      source: "Providers.Slashed events in the blocks read",
      color: "#b91c1c",
      dashed: true,
      step: true,
      points: s.map((p) => ({ x: p.block, y: toGrid(p.total) })),
    });
  const rewardTotal = r.length ? r[r.length - 1]!.total : 0n;
  const slashTotal = s.length ? s[s.length - 1]!.total : 0n;
  return (
    <section aria-labelledby="earnings-title" className="card">
      <h2 id="earnings-title">Rewards and slashes over time</h2>
      {error && <p role="alert">Could not read the rewards: {error}</p>}
      {rewards === undefined && !error ? (
        <p aria-busy="true">Loading rewards…</p>
      ) : series.length === 0 ? (
        <p className="empty">No reward or slash yet.</p>
      ) : (
        <>
          <p>
            Rewarded {formatGrid(rewardTotal)} for {rewards?.length ?? 0} contribution{rewards?.length === 1 ? "" : "s"}
            {slashes.length > 0 && `; slashed ${formatGrid(slashTotal)} in ${slashes.length} slash${slashes.length === 1 ? "" : "es"}`}.
          </p>
          <LineChart
            title="Cumulative rewards and slashes by block, in GRID"
            series={series}
            xLabel="block"
            yLabel="GRID"
            formatX={(x) => `#${x}`}
            formatY={gridTick}
            zeroBased
            tableCaption="Totals after each block with a reward or a slash, in GRID"
          />
        </>
      )}
      <p className="muted scan-note" aria-live="polite">
        Rewards come from chain state and are complete (a reward clawed back after a proven fraud still counts here).{" "}
        Slashes: {scanning ? "reading past blocks…" : scan ? describeScan(scan) : "from new finalized blocks."}
      </p>
    </section>
  );
}
