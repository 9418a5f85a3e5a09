"""Summarises `grid-node benchmark pallet --json-file` output as bench/reports/weights.{md,json}.

For each benchmark: the median measured time and the storage reads/writes at its largest
component values (the worst case the weight must cover), and that time's share of a block's
compute (the runtime's 2 s block, of which normal calls may use 75%).

usage: report.py RAW_DIR OUT_DIR STEPS REPEAT
"""

import json
import statistics
import sys
from pathlib import Path

BLOCK_NS = 2_000_000_000  # runtime MAXIMUM_BLOCK_WEIGHT: 2 s of compute
NORMAL_SHARE = 0.75
READ_NS, WRITE_NS = 8_000, 50_000  # the runtime's DbWeight (ParityDbWeight)


def worst(results):
    """Results at the largest component values (all components at their maximum)."""
    if not results:
        return []
    key = lambda r: tuple(v for _, v in r["components"])
    top = max(key(r) for r in results)
    return [r for r in results if key(r) == top]


def summarise(batch):
    time_at_max = worst(batch["time_results"])
    db_at_max = worst(batch["db_results"]) or time_at_max
    ns = statistics.median(r["extrinsic_time"] for r in time_at_max)
    spread = (min(r["extrinsic_time"] for r in time_at_max), max(r["extrinsic_time"] for r in time_at_max))
    first = db_at_max[0]
    return {
        "pallet": batch["pallet"],
        "benchmark": batch["benchmark"],
        "components": {name: value for name, value in first["components"]},
        "median_us": round(ns / 1_000, 1),
        "min_us": round(spread[0] / 1_000, 1),
        "max_us": round(spread[1] / 1_000, 1),
        "samples": len(time_at_max),
        "reads": first["reads"],
        "writes": first["writes"],
        "proof_size": first["proof_size"],
        "charged_us": round((ns + first["reads"] * READ_NS + first["writes"] * WRITE_NS) / 1_000, 1),
        "block_share": (ns + first["reads"] * READ_NS + first["writes"] * WRITE_NS) / (BLOCK_NS * NORMAL_SHARE),
    }


def main():
    raw, out, steps, repeat = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
    rows = []
    for path in sorted(raw.glob("*.json")):
        rows += [summarise(b) for b in json.loads(path.read_text())]
    out.mkdir(parents=True, exist_ok=True)
    heaviest = max(rows, key=lambda r: r["charged_us"])
    (out / "weights.json").write_text(json.dumps({
        "steps": int(steps),
        "repeat": int(repeat),
        "heaviest": {k: heaviest[k] for k in ("pallet", "benchmark", "median_us", "charged_us", "block_share")},
        "benchmarks": rows,
    }, indent=1) + "\n")
    lines = [
        "# Measured weights",
        "",
        f"`bash bench/weights.sh` (STEPS={steps}, REPEAT={repeat}): `grid-node benchmark pallet` on the",
        "runtime's wasm built with `runtime-benchmarks`, on this machine (2 cores, no GPU). The",
        "generated `pallets/*/src/weights.rs` are what the runtime charges; this table shows each",
        "benchmark at its largest components (the worst case): median time with its range over",
        "the repeats, the storage reads and writes observed, the proof size, the weight charged",
        "(time plus the reads and writes at ParityDB's 8 µs and 50 µs), and that weight's share of",
        "what a block gives normal calls (75% of 2 s).",
        "",
        "| pallet | benchmark | components | median µs | range µs | reads | writes | proof bytes | charged µs | share of block |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        comps = ", ".join(f"{k}={v}" for k, v in r["components"].items()) or "-"
        lines.append(
            f"| {r['pallet']} | {r['benchmark']} | {comps} | {r['median_us']:.1f} | "
            f"{r['min_us']:.1f}–{r['max_us']:.1f} | {r['reads']} | {r['writes']} | "
            f"{r['proof_size']} | {r['charged_us']:.0f} | {100 * r['block_share']:.2f}% |"
        )
    lines += ["", f"Heaviest: `{heaviest['pallet']}::{heaviest['benchmark']}`, {heaviest['median_us']:.0f} µs of "
              f"compute, {heaviest['charged_us']:.0f} µs charged ({100 * heaviest['block_share']:.2f}% of a block's normal weight).", ""]
    (out / "weights.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
