#!/usr/bin/env bash
# Memory per trainer against model size (issue 26's model-size sweep): for each GPT size, a
# `grid-node --dev` and two provider daemons train a chain job on the CPU for ROUNDS rounds (2; a
# few steps a round: the compute is cut short, the rest of a round, exchange, screens, segment
# checks, evidence, checkpoints and served states, is what it would be), through
# tests/src/bin/gpu_job.rs. Each provider's peak resident memory (VmHWM) is reported as MiB
# and as copies of the model (peak / 4 bytes per parameter). With BASELINE_TRAINER set to
# another grid-trainer binary, each size runs with it first and then with this tree's, side by
# side in one invocation, and the report gives the ratio. Writes bench/reports/memory.md and
# memory.json (REPORT moves them), with each provider's live memory by thread at its peak from
# grid-trainer's allocation ledger (`trainer/src/alloc_ledger.rs`), each role's own highest,
# and each provider's disk when the job ended (its data directory). A joiner's state-sync time against model size is
# bench/state_sync.sh's (reports/state_sync.md).
#
# usage: bench/memory.sh [SIZES]   (default "64,4,4,128 64,6,8,384 64,8,8,672":
#        context,layers,heads,width each; about 1M, 11M and 44M parameters; add 64,12,12,768
#        (85M) or 64,14,12,768 (99.7M) on a machine of 32 GB or more, or with
#        CURRENT_LINE='checks_beside_training = false' on 24 GiB: at 99.7M a provider peaked
#        at 9.5 GB with checks by turns and over 12 GB with a check beside training)
# Environment: BASELINE_TRAINER (a grid-trainer to compare with), BASELINE_SIZES (the sizes
# it runs at; all by default), CURRENT_LINE (a line added to this tree's providers' files only,
# e.g. 'checks_beside_training = false', with BASELINE_TRAINER=$CARGO_TARGET_DIR/release/grid-trainer
# to set an option against the same binary without it), ROUNDS (the job's rounds; 2 by default), REPORT, GRID_BENCH_NO_BUILD=1 (use the binaries already
# built), KEEP_LOGS=DIR (keep each run's node and provider logs there). About 15 GB at 44M.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f scripts/build-env.sh ] && source scripts/build-env.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}"
bin=$CARGO_TARGET_DIR/release
if [ -z "${GRID_BENCH_NO_BUILD:-}" ]; then
	cargo build --release --locked --workspace --all-targets
fi
export GRID_NODE_BIN=$bin/grid-node
# The shipped data, wherever the binaries were built.
export GRID_DATA_DIR=${GRID_DATA_DIR:-$PWD/data}
REPORT=${REPORT:-bench/reports/memory.md}
# Two rounds by default. The fraud desk holds past rounds' evidence (a base model each) in
# memory (`MEMORY_ROUNDS` and the rounds its checks read): only a longer job, ROUNDS=6 say,
# shows all of it.
rounds=${ROUNDS:-2}
export ROUNDS=$rounds
sizes=${1:-"64,4,4,128 64,6,8,384 64,8,8,672"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
runs=()
# Per provider log in DIR/keep, the last line saying PHRASE, as "provider<TAB>what follows
# the phrase's 'so far: '".
last_said() {
	local log line
	for log in "$1"/keep/*.log; do
		line=$(grep -a "$2" "$log" | tail -1 || true)
		if [ -n "$line" ]; then echo "$(basename "$log" .log)	${line#*so far: }"; fi
	done
}
for size in $sizes; do
	layers=$(echo "$size" | cut -d, -f2)
	width=$(echo "$size" | cut -d, -f4)
	# Longer rounds for larger models: two providers share two cores for their steps,
	# evaluations, screens and checks.
	blocks=$((6 + layers))
	# And a longer exchange from width 768: at 100M the 8 s allowance (2 x grace + half the
	# fetch window) left the proof of round 0 a few seconds late, in rounds of 20 and 34
	# blocks alike.
	fetch_ms=$((width >= 768 ? 24000 : 8000))
	for which in baseline current; do
		trainer=$bin/grid-trainer
		lines=()
		if [ "$which" = baseline ]; then
			[ -n "${BASELINE_TRAINER:-}" ] || continue
			[[ " ${BASELINE_SIZES:-$sizes} " == *" $size "* ]] || continue
			trainer=$BASELINE_TRAINER
		elif [ -n "${CURRENT_LINE:-}" ]; then
			lines=(--provider-line "$CURRENT_LINE")
		fi
		dir=$work/$which-${size//,/-}
		echo "== $size with the $which trainer ($trainer)" >&2
		status=0
		GRID_TRAINER_BIN=$trainer RUST_LOG=${RUST_LOG:-info} "$bin/gpu_job" --device cpu \
			--gpu-providers 2 --mixed-gpu 0 --mixed-cpu 0 --large "$size" --large-batch 8 \
			--rounds "$rounds" --round-blocks "$blocks" --max-steps 2 --grace-ms 2000 --fetch-ms "$fetch_ms" \
			--threads 1 --eval-samples 100 "${lines[@]}" --out "$dir" --keep "$dir/keep" >"$dir.log" 2>&1 \
			|| status=$?
		echo "   exit $status" >&2
		# Each provider's last word from its allocation ledger (grid-trainer's
		# `alloc_ledger`): live large blocks by thread at their peak, and each role's own
		# highest (verification that missed the peak shows there); a baseline binary
		# without them leaves the files empty. The kept data directories go at once.
		last_said "$dir" "live memory at its peak so far" >"$dir/ledger.tsv"
		last_said "$dir" "each role's own highest so far" >"$dir/highs.tsv"
		# Each provider's data directory as the job left it (checkpoint, kept states,
		# evidence: what the challenge window still holds), hard links counted once.
		for config in "$dir"/keep/*.toml; do
			[ -d "${config%.toml}" ] || continue
			printf '%s\t%s\n' "$(basename "$config" .toml)" "$(du -s --block-size=1 "${config%.toml}" | cut -f1)"
		done >"$dir/disk.tsv"
		if [ -n "${KEEP_LOGS:-}" ]; then
			mkdir -p "$KEEP_LOGS/$which-${size//,/-}"
			cp "$dir/keep"/*.log "$dir.log" "$KEEP_LOGS/$which-${size//,/-}/" || true
		fi
		rm -rf "$dir/keep"
		runs+=("$which=$size=$dir/gpu_e2e.json=$status")
	done
done
python3 bench/memory_report.py "$REPORT" "$(git rev-parse --short HEAD)" "${runs[@]}"
