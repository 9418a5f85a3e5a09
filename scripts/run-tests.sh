#!/usr/bin/env bash
# Runs every test suite after the build: the workspace's test binaries (unit, integration and
# end-to-end), doc tests, zombienet, the web UI and the pallet benchmarks, in three lanes at
# once. The machines have two cores and most end-to-end tests spend their time waiting for
# 6-second blocks, so the lanes overlap that waiting: lane 1 holds the unit tests, the network
# jobs and the pallet benchmarks (their own feature build); lane 2 the trainer's network
# tests, the chain-only end-to-end tests and the doc tests; lane 3 the own-images job,
# zombienet and the web UI.
# The lanes take about as long as each other. Every test waits for the state it asserts with
# a deadline, so sharing the cores makes them slower, not wrong.
#
# Each binary's output goes to its own log, printed when it fails; a lane stops at its first
# failure, the others run on, and the script fails if any did.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/build-env.sh
root=$PWD
logs=$(mktemp -d "${TMPDIR:-/tmp}/grid-tests.XXXXXX")

# The trainer's network tests, the chain-only end-to-end tests (the proof load among them)
# and the own-data job (lane 2);
# every other test binary runs in lane 1.
LANE2_TESTS=" network cli_errors metadata dev_chain providers jobs worker local_testnet fraud own_data proof_load "
# The buyer's own images and ResNet job (lane 3, beside zombienet and the web UI).
LANE3_TESTS=" own_images "
# Suites that only compute (unit tests, the short red-team suite, the benchmarks' and doc
# tests' compiles) run at a lower CPU priority, so that when the lanes contend for the two
# cores the end-to-end suites, whose rounds and blocks run on the clock, are served first: a
# CI run failed when the trainers of `network` (2.5 s rounds) shared the cores with the unit
# tests and the own-images job's start, fell behind their deadlines and never caught up.
# Their own waits are generous (minutes), so a lower priority only makes them slower. The
# lowest (19), the trainers' compute threads' own (`trainer/src/priority.rs`): at 10 the unit
# tests took about seven eighths of the cores from the own-images job's steps, whose round 0
# ran beside them, and all three providers committed 7 s past the deadline, unpaid.
BACKGROUND_TESTS=" grid_trainer grid_primitives grid_runtime grid_offchain_worker grid_redteam pallet_jobs pallet_providers short datasets hf_export gpt_parity "
BACKGROUND_NICE=19

cargo test --release --locked --workspace --no-run --message-format=json-render-diagnostics \
	>"$logs/build.jsonl"
# One line per test binary: target name, package directory (the working directory cargo would
# give it), executable.
python3 - "$logs/build.jsonl" >"$logs/binaries.tsv" <<'EOF'
import json, os, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(f"{m['target']['name']}\t{os.path.dirname(m['manifest_path'])}\t{m['executable']}")
EOF

# run LANE NAME COMMAND...: runs a suite, logs it, reports it; fails when it fails.
run() {
	local lane=$1 name=$2 log="$logs/$1-$2.log" began=$SECONDS
	shift 2
	if "$@" >"$log" 2>&1; then
		printf 'lane %s: %-22s ok     %4d s  %s\n' "$lane" "$name" "$((SECONDS - began))" \
			"$(grep -E '^test result:' "$log" | tail -n 1 | cut -c 14-60)"
	else
		printf 'lane %s: %-22s FAILED %4d s (log below)\n' "$lane" "$name" "$((SECONDS - began))"
		sed "s/^/  [$name] /" "$log" | tail -n 200
		# What failed, last: a failing check's message may be followed by pages of logs.
		grep -E '^(Error: |---- .* stdout ----|thread .* panicked at)' "$log" | head -n 20 |
			cut -c 1-400 | sed "s/^/  [$name] failed: /" | tee -a "$logs/failures" || true
		return 1
	fi
}

# binaries LANE: runs the lane's test binaries in the order cargo built them.
binaries() {
	local lane=$1 name dir exe its_lane
	while IFS=$'\t' read -r name dir exe; do
		its_lane=1
		[[ $LANE2_TESTS == *" $name "* ]] && its_lane=2
		[[ $LANE3_TESTS == *" $name "* ]] && its_lane=3
		[ "$its_lane" = "$lane" ] || continue
		nice=0
		[[ $BACKGROUND_TESTS == *" $name "* ]] && nice=$BACKGROUND_NICE
		run "$lane" "$name" nice -n "$nice" bash -c 'cd "$1" && exec "$2"' _ "$dir" "$exe" ||
			return 1
	done <"$logs/binaries.tsv"
}

lane1() {
	binaries 1 &&
		run 1 pallet-benchmarks nice -n "$BACKGROUND_NICE" cargo test --release --locked -p pallet-providers -p pallet-jobs \
			--features pallet-providers/runtime-benchmarks,pallet-jobs/runtime-benchmarks
}

lane2() {
	binaries 2 &&
		run 2 doc-tests nice -n "$BACKGROUND_NICE" cargo test --release --locked --workspace --doc
}

lane3() {
	binaries 3 &&
		run 3 zombienet "$root/scripts/zombienet.sh" &&
		run 3 web-ui "$root/scripts/frontend.sh"
}

pids=()
for lane in lane1 lane2 lane3; do
	"$lane" &
	pids+=($!)
done
status=0
for pid in "${pids[@]}"; do
	wait "$pid" || status=1
done
if ((status)); then
	# Every lane's failing lines once more, after whatever the other lanes printed since.
	cat "$logs/failures" 2>/dev/null || true
	echo "tests failed (logs in $logs)" >&2
	exit 1
fi
rm -rf "$logs"
