import { formatScore } from "../lib/providers";
import { NANOS_ONE } from "../lib/units";

/** A health score (Perbill parts) as its number and a small bar; the bar is decoration only. */
export function ScoreBar({ score, width = 64 }: { score: number; width?: number }) {
  const fraction = Math.min(Math.max(score / NANOS_ONE, 0), 1);
  const level = fraction >= 0.8 ? "good" : fraction >= 0.5 ? "fair" : "poor";
  return (
    <span className="score">
      <span>{formatScore(score)}</span>
      <svg className={`score-bar score-${level}`} width={width} height={8} aria-hidden="true" focusable="false">
        <rect className="score-track" x={0} y={0} width={width} height={8} rx={2} />
        <rect className="score-fill" x={0} y={0} width={Math.round(fraction * width)} height={8} rx={2} />
      </svg>
    </span>
  );
}
