#!/usr/bin/env bash
# Builds the web UI (frontend/) and runs its tests: the unit and component tests, then the tests
# against a real `grid-node --dev` (in jsdom, then the built UI in headless Chromium, with real
# `grid-trainer` providers training a job), the node started here on free loopback ports in a
# temporary directory and stopped at the end. Needs the release node and trainer built (the
# test command builds them first) and installs the UI's packages from its lockfile.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}"
NODE_BIN="$CARGO_TARGET_DIR/release/grid-node"
[ -x "$NODE_BIN" ] || { echo "frontend: $NODE_BIN is missing: build the workspace first" >&2; exit 1; }
# The browser test and the registration test run real trainers.
export GRID_TRAINER="$CARGO_TARGET_DIR/release/grid-trainer"
[ -x "$GRID_TRAINER" ] || { echo "frontend: $GRID_TRAINER is missing: build the workspace first" >&2; exit 1; }

cd frontend
npm ci --no-audit --no-fund --loglevel=error
npm run build
npm test

free_port() { python3 ../scripts/free-port.py; }
base=$(mktemp -d "${TMPDIR:-/tmp}/grid-frontend.XXXXXX")
rpc=$(free_port)
"$NODE_BIN" --dev --base-path "$base" --rpc-port "$rpc" --port "$(free_port)" \
	--prometheus-port "$(free_port)" >"$base/node.log" 2>&1 &
node_pid=$!
trap 'kill "$node_pid" 2>/dev/null; wait "$node_pid" 2>/dev/null; rm -rf "$base"' EXIT
for _ in $(seq 60); do
	python3 -c "import socket; socket.create_connection(('127.0.0.1', $rpc), 1)" 2>/dev/null && break
	sleep 1
done
if ! GRID_RPC="ws://127.0.0.1:$rpc" npm run test:node || ! GRID_RPC="ws://127.0.0.1:$rpc" npm run test:e2e; then
	tail -n 30 "$base/node.log"
	exit 1
fi
