#!/usr/bin/env bash
# Runs the zombienet tests (zombienet/*.zndsl): multi-validator grid-node networks started by
# zombienet's native provider from the release binaries, which must be built already (the
# test command builds them first). Installs @zombienet/cli locally from the lockfile.
#
# Usage: ./scripts/zombienet.sh [zombienet/NNNN-name.zndsl ...]   (default: all of them)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}"
export GRID_NODE="$CARGO_TARGET_DIR/release/grid-node"
export GRID_TRAINER="$CARGO_TARGET_DIR/release/grid-trainer"
for bin in "$GRID_NODE" "$GRID_TRAINER"; do
	[ -x "$bin" ] || { echo "zombienet: $bin is missing: build the workspace first" >&2; exit 1; }
done

(cd zombienet && npm ci --no-audit --no-fund --loglevel=error)

tests=("$@")
((${#tests[@]})) || tests=(zombienet/*.zndsl)
for test in "${tests[@]}"; do
	test=$(realpath "$test")
	dir=$(mktemp -d "${TMPDIR:-/tmp}/grid-zombienet.XXXXXX")
	echo "zombienet: $test (network files and logs in $dir)"
	# -f: the directory exists already (zombienet would ask before using it).
	if ! (cd zombienet && npx zombienet -p native -l text -f -d "$dir" test "$test"); then
		for log in "$dir"/*.log; do
			[ -e "$log" ] && { echo "--- $log"; tail -n 30 "$log"; }
		done
		echo "zombienet: $test failed (files kept in $dir)" >&2
		exit 1
	fi
	rm -rf "$dir"
done
