#!/usr/bin/env bash
# Datasets: (1) fetch throughput of `grid-trainer data fetch` (every 1 MiB chunk checked
# against the manifest) from a `grid-trainer data publish` on loopback, over its plain bulk
# lane (the default) and from a publisher with `--encrypted-only` (noise, yamux), against curl
# of the same file from `python3 -m http.server` on loopback, run in turn, REPEATS times each
# after one warm-up of each; (2) resident memory of
# `bench_data train` (the daemon's dataset load, then a small transformer trained on batches
# drawn across the whole file) on a BIG_MIB and a SMALL_MIB file of random u16 tokens.
# Writes bench/reports/datasets.md and datasets.json.
#
# usage: bench/datasets.sh [REPEATS]   (default 5)
# Environment: FETCH_MIB (256), SMALL_MIB (64), BIG_MIB (4096), STEPS (200), VOCAB (4096);
# GRID_BENCH_NO_BUILD=1 uses the binaries already in $CARGO_TARGET_DIR without building;
# PROFILE=0 skips the perf profiles of one extra fetch of each kind (taken when perf is
# installed).
# Everything runs in a temporary directory (removed at the end, with every process started
# here), on 127.0.0.1 only; it needs about BIG_MIB + 3 x FETCH_MIB of free disk.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f scripts/build-env.sh ] && source scripts/build-env.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}"
REPEATS="${1:-5}"
FETCH_MIB="${FETCH_MIB:-256}"
SMALL_MIB="${SMALL_MIB:-64}"
BIG_MIB="${BIG_MIB:-4096}"
STEPS="${STEPS:-200}"
VOCAB="${VOCAB:-4096}"

if [ -z "${GRID_BENCH_NO_BUILD:-}" ]; then
	cargo build --release --locked --workspace --bin grid-trainer --bin bench_data
fi
bin="$CARGO_TARGET_DIR/release"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/grid-datasets.XXXXXX")
raw="$tmp/raw"
mkdir -p "$raw"
pids=()
cleanup() {
	for pid in ${pids[@]+"${pids[@]}"}; do
		kill "$pid" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

now() { date +%s.%N; }
# CPU seconds (user + system, all threads) process $1 has used so far.
cpu_of() { awk -v tck="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / tck }' "/proc/$1/stat"; }
# Waits until file $2 has a line matching $1 (up to $3 seconds) while process $4 lives.
wait_for() {
	for _ in $(seq $(($3 * 10))); do
		grep -q "$1" "$2" 2>/dev/null && return 0
		kill -0 "$4" 2>/dev/null || { echo "process $4 ended before '$1'" >&2; return 1; }
		sleep 0.1
	done
	echo "timed out waiting for '$1' in $2" >&2
	return 1
}

cat >"$raw/meta.env" <<EOF
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- 2>/dev/null || echo "+dirty")
nproc=$(nproc)
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
mem_kib=$(awk '/^MemTotal/{print $2}' /proc/meminfo)
kernel=$(uname -r)
curl=$(curl --version | head -1 | cut -d' ' -f1-2)
python=$(python3 --version)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
repeats=$REPEATS
fetch_mib=$FETCH_MIB
small_mib=$SMALL_MIB
big_mib=$BIG_MIB
steps=$STEPS
vocab=$VOCAB
command=bench/datasets.sh $*
EOF

# ---- 1. Fetch throughput: libp2p vs curl, same file, loopback ----
mkdir -p "$tmp/src"
head -c $((FETCH_MIB << 20)) /dev/urandom >"$tmp/src/train.bin"
# Two publishers of the same file: the default (bulk lane) and one that serves only over the
# encrypted stream.
declare -A publisher address
for kind in lane stream; do
	extra=()
	[ "$kind" = stream ] && extra=(--encrypted-only)
	"$bin/grid-trainer" data publish "$tmp/src" --format tokens-u16 --store "$tmp/store-$kind" \
		--listen /ip4/127.0.0.1/tcp/0 ${extra[@]+"${extra[@]}"} >"$tmp/publish-$kind.out" \
		2>"$tmp/publish-$kind.log" &
	publisher[$kind]=$!
	pids+=("${publisher[$kind]}")
	wait_for "^serving on " "$tmp/publish-$kind.out" 300 "${publisher[$kind]}"
	address[$kind]=$(awk '/^serving on /{print $3}' "$tmp/publish-$kind.out")
done
reference=$(awk '/^reference /{print $2}' "$tmp/publish-lane.out")
port=$(python3 scripts/free-port.py)
python3 -m http.server --bind 127.0.0.1 "$port" --directory "$tmp/src" >"$tmp/http.log" 2>&1 &
httpd=$!
pids+=("$httpd")
for _ in $(seq 100); do
	curl -s -o /dev/null "http://127.0.0.1:$port/" && break
	sleep 0.1
done
echo "publishers ${address[lane]} and ${address[stream]} ($reference); http://127.0.0.1:$port/train.bin"

# One transfer by method $1 (lane|stream|curl), labelled $2; appends a line to fetch.tsv.
fetch_once() {
	local method=$1 label=$2 out="$tmp/fetched-$2" server t0 t1 c0 c1 file
	if [ "$method" = curl ]; then server=$httpd; else server=${publisher[$method]}; fi
	c0=$(cpu_of "$server")
	t0=$(now)
	if [ "$method" != curl ]; then
		/usr/bin/time -f "%U %S" -o "$tmp/time" "$bin/grid-trainer" data fetch \
			--reference "$reference" --uri "${address[$method]}" --store "$out" \
			>"$raw/fetch-$method-$label.out" 2>"$raw/fetch-$method-$label.log"
	else
		/usr/bin/time -f "%U %S" -o "$tmp/time" curl -sS -o "$out" \
			"http://127.0.0.1:$port/train.bin"
	fi
	t1=$(now)
	c1=$(cpu_of "$server")
	if [ "$method" != curl ]; then file=$(echo "$out"/*/files/train.bin); else file=$out; fi
	cmp -s "$tmp/src/train.bin" "$file" || { echo "$method $label: wrong bytes" >&2; exit 1; }
	rm -rf "$out"
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$method" "$label" "$t0" "$t1" "$(tr ' ' '\t' <"$tmp/time")" \
		"$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }')" >>"$raw/fetch.tsv"
	awk -v b=$((FETCH_MIB << 20)) -v t0="$t0" -v t1="$t1" -v m="$method" -v l="$label" \
		'BEGIN { printf "%s %s: %.1f MB/s\n", m, l, b / (t1 - t0) / 1e6 }'
}

printf 'method\tlabel\tstart\tend\tclient_user_s\tclient_sys_s\tserver_cpu_s\n' >"$raw/fetch.tsv"
methods=(lane stream curl)
for method in "${methods[@]}"; do
	fetch_once "$method" warmup
done
for r in $(seq "$REPEATS"); do
	# Each repetition starts one method later than the one before.
	for i in 0 1 2; do
		fetch_once "${methods[$(((r + i) % 3))]}" "$r"
	done
done
# Where the CPU goes: one more fetch of each kind with both ends sampled by perf (when
# installed; PROFILE=0 skips it). Not timed.
if [ "${PROFILE:-1}" != 0 ] && command -v perf >/dev/null; then
	for kind in lane stream; do
		perf record -F 499 -o "$tmp/perf.server" -p "${publisher[$kind]}" >/dev/null 2>&1 &
		sampler=$!
		pids+=("$sampler")
		sleep 0.5
		perf record -F 499 -o "$tmp/perf.client" -- "$bin/grid-trainer" data fetch \
			--reference "$reference" --uri "${address[$kind]}" --store "$tmp/fetched-profile" \
			>/dev/null 2>&1
		kill -INT "$sampler"
		wait "$sampler" || true
		for end in client server; do
			perf report -i "$tmp/perf.$end" --no-children --sort symbol --stdio 2>/dev/null |
				grep -E '^ +[0-9.]+%' | head -12 >"$raw/profile-$kind-$end.txt" || true
		done
		rm -rf "$tmp/fetched-profile" "$tmp"/perf.*
	done
fi
kill "${publisher[@]}" "$httpd" 2>/dev/null || true
wait "${publisher[@]}" "$httpd" 2>/dev/null || true
pids=()
rm -rf "$tmp/src" "$tmp"/store-lane "$tmp"/store-stream

# ---- 2. Resident memory while training on a large dataset ----
for size in small big; do
	if [ "$size" = small ]; then mib=$SMALL_MIB; else mib=$BIG_MIB; fi
	mkdir -p "$tmp/$size"
	t0=$(now)
	"$bin/bench_data" gen "$tmp/$size/train.bin" "$mib" "$VOCAB"
	t1=$(now)
	awk -v m="$mib" -v a="$t0" -v b="$t1" 'BEGIN { printf "generated %d MiB in %.1f s\n", m, b - a }'
	echo "gen_${size}_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')" >>"$raw/meta.env"
	/usr/bin/time -v -o "$raw/memory-$size.time" "$bin/bench_data" train "$tmp/$size" \
		"$tmp/store-$size" --steps "$STEPS" --vocab "$VOCAB" >"$raw/memory-$size.json"
	grep "Maximum resident" "$raw/memory-$size.time"
	rm -rf "$tmp/$size" "$tmp/store-$size"
done
echo "load_after=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$raw/meta.env"

python3 bench/datasets_report.py "$raw" bench/reports
echo "wrote bench/reports/datasets.md and bench/reports/datasets.json"
