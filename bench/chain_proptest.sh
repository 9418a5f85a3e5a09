#!/usr/bin/env bash
# The job market's property test at scale: SEQUENCES random call sequences (default 100,000;
# CI runs 48) of every call of pallet-jobs and pallet-providers, some of them hostile, with
# `try_state` after every step and block and the issuance check after every step
# (`pallets/jobs/src/proptests.rs`).
# Seeds are split over SHARDS processes (default: the number of cores). Writes
# bench/reports/chain_proptest.md and chain_proptest.json: sequences run, seeds, time, and how
# often each path (rewards, challenges, frauds, stake-shortfall removals, abandoned jobs,
# unbonds, deregistrations, ...) was taken. A failure prints its seed and fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}"
SEQUENCES="${SEQUENCES:-100000}"
SHARDS="${SHARDS:-$(nproc)}"
[ -f scripts/build-env.sh ] && source scripts/build-env.sh
bin=$(cargo test --release --locked --workspace --no-run --message-format=json 2>/dev/null |
	python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "pallet_jobs":
        print(m["executable"])')
[ -x "$bin" ] || { echo "pallet-jobs test binary not found" >&2; exit 1; }
out=$(mktemp -d)
per=$(((SEQUENCES + SHARDS - 1) / SHARDS))
start=$(date +%s)
pids=()
for s in $(seq 0 $((SHARDS - 1))); do
	first=$((s * per))
	count=$((SEQUENCES - first < per ? SEQUENCES - first : per))
	[ "$count" -gt 0 ] || continue
	GRID_PROPTEST_FIRST_SEED=$first GRID_PROPTEST_SEQUENCES=$count \
		"$bin" proptests::random_call_sequences_keep_the_invariants --exact --nocapture \
		>"$out/shard-$s.log" 2>&1 &
	pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
seconds=$(($(date +%s) - start))
mkdir -p bench/reports
python3 - "$out" "$SEQUENCES" "$SHARDS" "$seconds" "$failed" <<'PY'
import json, pathlib, re, sys
out, sequences, shards, seconds, failed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
total, ran, failures = {}, 0, []
for log in sorted(pathlib.Path(out).glob("shard-*.log")):
    text = log.read_text()
    m = re.search(r"(\d+) sequences: Coverage \{(.*?)\}", text)
    if not m:
        failures.append(next((l for l in text.splitlines() if "seed" in l), log.name))
        continue
    ran += int(m.group(1))
    for key, value in re.findall(r"(\w+): (\d+)", m.group(2)):
        total[key] = total.get(key, 0) + int(value)
report = {"sequences": ran, "requested": sequences, "steps_per_sequence": 300, "shards": shards,
          "seconds": seconds, "passed": not failed and not failures, "failures": failures, "coverage": total}
pathlib.Path("bench/reports/chain_proptest.json").write_text(json.dumps(report, indent=2) + "\n")
rows = "\n".join(f"| {k} | {v:,} |" for k, v in total.items())
md = f"""# Job market property test at scale

`bench/chain_proptest.sh`: {ran:,} of {sequences:,} random call sequences of 300 steps each
(seeds 0 to {sequences - 1}) over {shards} processes in {seconds} s; `try_state` of both pallets
after every step and block, the issuance check after every step, and every job ended at the
end. Result: **{"passed" if report["passed"] else "FAILED"}**.
{"".join(f"- failure: {f}" + chr(10) for f in failures)}
How often each path was taken (events over all sequences):

| path | count |
|---|---|
{rows}
"""
pathlib.Path("bench/reports/chain_proptest.md").write_text(md)
print(md)
PY
exit "$failed"
