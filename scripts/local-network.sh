#!/usr/bin/env bash
# The main job, end to end on this machine: a development chain (`grid-node --dev`), four
# provider daemons (Bob, Charlie, Dave, Eve) that register with stake and join (a job open to
# challenges needs four, so that a challenged update leaves a committee of two), and Alice as the
# buyer posting a byte-level GPT job on Tiny Shakespeare (examples/shakespeare-job.toml).
# The providers train it together over libp2p for a few minutes on the CPU, attest every
# round on chain and are paid per round; Alice follows the loss and downloads the model.
#
# Usage: ./scripts/local-network.sh [job.toml]   (state and logs go to ./local-network/;
# GRID_KEEP_CHAIN=1 keeps the chain running afterwards, to browse it with the web UI)
set -euo pipefail
cd "$(dirname "$0")/.."
JOB_SPEC="${1:-examples/shakespeare-job.toml}"
OUT="$PWD/local-network"

./scripts/setup.sh
# The same build as the test command, so one build serves both.
source scripts/build-env.sh
cargo build --release --locked --workspace --all-targets
BIN="$CARGO_TARGET_DIR/release"

free_port() { python3 scripts/free-port.py; }

rm -rf "$OUT" && mkdir -p "$OUT"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

RPC=$(free_port)
"$BIN/grid-node" --dev --base-path "$OUT/node" --rpc-port "$RPC" --port "$(free_port)" \
	--prometheus-port "$(free_port)" >"$OUT/node.log" 2>&1 &
pids+=($!)
URL="ws://127.0.0.1:$RPC"
echo "grid-node --dev: $URL (log: $OUT/node.log)"

for who in Bob Charlie Dave Eve; do
	name=$(echo "$who" | tr 'A-Z' 'a-z')
	cat >"$OUT/$name.toml" <<TOML
name = "$name"
data_dir = "$name"
listen = "/ip4/127.0.0.1/tcp/$(free_port)"
threads = 1

[chain]
url = "$URL"
account = "//$who"
stake = 6000
endpoint = "http://127.0.0.1:$(free_port)/health"
serve_final_secs = 120

[training]
eval_samples = 200
TOML
	RUST_LOG=info,libp2p_gossipsub=warn "$BIN/grid-trainer" provide --config "$OUT/$name.toml" \
		>"$OUT/$name.log" 2>&1 &
	pids+=($!)
	echo "provider $who: $OUT/$name.log"
done

echo "Alice posts $JOB_SPEC and follows it:"
"$BIN/grid-trainer" job create --url "$URL" --account //Alice --spec "$JOB_SPEC" --follow
"$BIN/grid-trainer" job fetch --url "$URL" --job 0 --out "$OUT/model.safetensors"
echo
echo "Held-out loss per round (bob):"
python3 - "$OUT/bob/job-0/rounds.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"  round {r['round']}: eval loss {r['eval_loss']}, {len(r['aggregated'])} updates aggregated")
PY
echo "The model: $OUT/model.safetensors (also each provider's $OUT/<name>/job-0/checkpoint.safetensors)"
echo "Chain: $URL; the web UI: (cd frontend && npm ci && npm run dev), then open"
echo "  http://localhost:5173/?rpc=$URL"
if [ "${GRID_KEEP_CHAIN:-0}" = 1 ]; then
	echo "The chain keeps running (GRID_KEEP_CHAIN=1): Ctrl-C stops it."
	wait "${pids[0]}"
else
	echo "The chain stops now; GRID_KEEP_CHAIN=1 keeps it running for the UI."
fi
