#!/usr/bin/env bash
# The red-team suite (bench/redteam): every attacker placed next to four honest providers,
# ATTEMPTS times each (100 unless given), with the real trainer library (training, screens,
# replays, the daemon's fraud desk) against the real pallets in their test runtime (audits at
# the runtime's 1%). Writes bench/reports/redteam.md and bench/reports/redteam.json.
#
# Usage: bash bench/redteam.sh [ATTEMPTS]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/build-env.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}"
attempts="${1:-100}"
# The whole workspace, as the tests build it: the same features, so nothing is rebuilt.
cargo build --release --locked --workspace --all-targets
out=bench/reports
mkdir -p "$out"
"$CARGO_TARGET_DIR/release/grid-redteam" --attempts "$attempts" --out "$out.tmp-redteam" 2> "$out/redteam.log"
# The report: the measured table and figures, then how they were made.
{
	echo "# Red-team suite"
	echo
	changes=""
	git diff --quiet HEAD -- . ':!bench/reports' || changes=" with uncommitted changes (committed with this report)"
	echo "Measured by \`bash bench/redteam.sh $attempts\` on $(date -u +%Y-%m-%d) at \`$(git rev-parse --short HEAD)\`$changes"
	echo "($(nproc) cores); headline figures in \`redteam.json\`, every attempt in \`redteam.log\`."
	echo
	cat "$out.tmp-redteam/redteam.md"
	echo
	cat bench/redteam/METHOD.md
} > "$out/redteam.md"
mv "$out.tmp-redteam/redteam.json" "$out/redteam.json"
rm -rf "$out.tmp-redteam"
echo "wrote $out/redteam.md and $out/redteam.json"
