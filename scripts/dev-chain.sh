#!/usr/bin/env bash
# Builds grid-node (if needed) and runs a single-validator development chain (Alice).
# Extra arguments go to grid-node, e.g. `./scripts/dev-chain.sh --rpc-port 9955`.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}"

./scripts/setup.sh
cargo build --release --locked -p grid-node
echo "grid-node --dev: JSON-RPC on ws://127.0.0.1:9944, Prometheus on http://127.0.0.1:9615/metrics"
exec "$CARGO_TARGET_DIR/release/grid-node" --dev "$@"
