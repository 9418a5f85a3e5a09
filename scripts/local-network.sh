#!/usr/bin/env bash
# The main job, end to end on this machine: a development chain (`grid-node --dev`), four
# provider daemons (Bob, Charlie, Dave, Eve) that register with stake and join (a job open to
# challenges needs four, so that a challenged update leaves a committee of two), and Alice as the
# buyer with her own data and model: she trains a BPE tokenizer on Tiny Shakespeare, publishes
# the text with it as a content-addressed dataset (`grid-trainer data publish`, served over
# libp2p) and posts a small Llama-style job on it (examples/llama-bpe-job.toml). The providers
# fetch and check the data, train the model together over libp2p for a few minutes on the CPU,
# attest every round on chain and are paid per round; Alice follows the loss, downloads the
# model in the Hugging Face layout, and samples text from it with Python `transformers`.
#
# Usage: ./scripts/local-network.sh [job.toml]   (another job file runs as it is, e.g.
# examples/shakespeare-job.toml; state and logs go to ./local-network/;
# GRID_KEEP_CHAIN=1 keeps the chain running afterwards, to browse it with the web UI)
set -euo pipefail
cd "$(dirname "$0")/.."
JOB_SPEC="${1:-examples/llama-bpe-job.toml}"
OUT="$PWD/local-network"

./scripts/setup.sh
# The same build as the test command, so one build serves both.
source scripts/build-env.sh
cargo build --release --locked --workspace --all-targets
BIN="$CARGO_TARGET_DIR/release"
PY="${GRID_PYTHON_ENV:-$HOME/.cache/grid-python}/bin/python"

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

# A job file whose dataset is "published at run time" gets Alice's own: Tiny Shakespeare with a
# BPE tokenizer trained on it, published and served until the end.
JOB_FILE="$JOB_SPEC"
HF=()
if grep -q '^dataset = { uri = "published at run time"' "$JOB_SPEC"; then
	mkdir -p "$OUT/corpus"
	cp data/shakespeare.txt "$OUT/corpus/"
	"$PY" scripts/python/train_tokenizer.py "$OUT/corpus/tokenizer.json" 512 "$OUT/corpus/shakespeare.txt"
	"$BIN/grid-trainer" data publish "$OUT/corpus" --format text-bpe --store "$OUT/buyer-datasets" \
		--listen "/ip4/127.0.0.1/tcp/$(free_port)" >"$OUT/publish.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 120); do
		grep -q '^job file: ' "$OUT/publish.log" 2>/dev/null && break
		sleep 0.5
	done
	line=$(sed -n 's/^job file: //p' "$OUT/publish.log")
	[ -n "$line" ] || { cat "$OUT/publish.log"; echo "publishing the dataset failed" >&2; exit 1; }
	echo "Alice publishes her dataset: $line"
	JOB_FILE="$OUT/job.toml"
	{ echo "$line"; grep -v '^dataset = ' "$JOB_SPEC"; } >"$JOB_FILE"
	# The result also in the Hugging Face layout, with the tokenizer.
	HF=(--hf "$OUT/model-hf" --store "$OUT/buyer-datasets")
fi

echo "Alice posts $JOB_FILE and follows it:"
"$BIN/grid-trainer" job create --url "$URL" --account //Alice --spec "$JOB_FILE" --follow
"$BIN/grid-trainer" job fetch --url "$URL" --job 0 --out "$OUT/model.safetensors" "${HF[@]}"
echo
echo "Held-out loss per round (bob):"
python3 - "$OUT/bob/job-0/rounds.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"  round {r['round']}: eval loss {r['eval_loss']}, {len(r['aggregated'])} updates aggregated")
PY
echo "The model: $OUT/model.safetensors (also each provider's $OUT/<name>/job-0/checkpoint.safetensors)"
if [ -f "$OUT/model-hf/tokenizer.json" ]; then
	echo "Loaded in Hugging Face transformers ($OUT/model-hf), sampled:"
	"$PY" scripts/python/sample.py "$OUT/model-hf" "ROMEO:" 80
fi
echo "Chain: $URL; the web UI: (cd frontend && npm ci && npm run dev), then open"
echo "  http://localhost:5173/?rpc=$URL"
if [ "${GRID_KEEP_CHAIN:-0}" = 1 ]; then
	echo "The chain keeps running (GRID_KEEP_CHAIN=1): Ctrl-C stops it."
	wait "${pids[0]}"
else
	echo "The chain stops now; GRID_KEEP_CHAIN=1 keeps it running for the UI."
fi
