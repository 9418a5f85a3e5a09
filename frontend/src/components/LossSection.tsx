import { shortAddress } from "../lib/format";
import { trainerProblem, type LossSeries, type TrainerReading } from "../lib/losses";
import { LineChart, PALETTE, type ChartSeries } from "./LineChart";

export interface LossSectionProps {
  job: bigint;
  series: LossSeries[];
  trainers: TrainerReading[];
  /** Whether trainers are polled (the job is live). */
  polling?: boolean;
}

const CHAIN_COLOR = "#44403c";

/** Colors by trainer (eval solid, train dashed), the chain's proofs in dark grey. */
export function chartSeriesOf(series: LossSeries[]): ChartSeries[] {
  const owners = [...new Set(series.filter((s) => s.id !== "train:chain").map((s) => s.id.slice(s.id.indexOf(":") + 1)))];
  return series.map((s) => {
    const owner = s.id.slice(s.id.indexOf(":") + 1);
    const color = s.id === "train:chain" ? CHAIN_COLOR : PALETTE[owners.indexOf(owner) % PALETTE.length]!;
    return { id: s.id, label: s.label, source: s.source, color, dashed: s.kind === "train", points: s.points };
  });
}

const loss = (y: number) => (Math.abs(y) >= 100 ? y.toFixed(0) : y.toPrecision(4));

/** The loss curve of a job: per-round eval / train loss from trainers and the chain. */
export function LossSection({ job, series, trainers, polling }: LossSectionProps) {
  const points = series.reduce((n, s) => n + s.points.length, 0);
  return (
    <section aria-labelledby="loss-title" className="card">
      <h2 id="loss-title">Loss curve</h2>
      {points === 0 ? (
        <p className="empty">
          No losses yet: they appear once a round's proofs reach the chain or a participant's trainer reports its history.
        </p>
      ) : (
        <LineChart
          title={`Loss per round of job #${job}`}
          series={chartSeriesOf(series)}
          xLabel="round"
          yLabel="loss"
          formatX={(x) => String(x)}
          formatY={loss}
          tableCaption="Loss per round, by series"
        />
      )}
      {trainers.length > 0 && (
        <>
          <h3>Trainers{polling ? " (read every few seconds)" : ""}</h3>
          <ul className="trainers" aria-label="Trainers">
            {trainers.map((t) => {
              const problem = trainerProblem(t, job);
              return (
                <li key={t.who} className={problem && problem !== "not read yet" ? "failed" : undefined}>
                  <span className="mono" title={t.who}>
                    {shortAddress(t.who)}
                  </span>
                  {t.endpoint && <span className="muted mono"> {t.endpoint}</span>}:{" "}
                  {problem
                    ? problem === "not read yet"
                      ? "reading…"
                      : `cannot use its status: ${problem}`
                    : `${t.status!.name || "trainer"}, round ${t.status!.round ?? "—"}${t.status!.synced ? "" : " (syncing)"}, ${t.status!.history!.length} rounds of history${t.status!.finished ? ", finished" : ""}`}
                </li>
              );
            })}
          </ul>
        </>
      )}
    </section>
  );
}
