#!/usr/bin/env bash
# The red-team suite (bench/redteam): every attacker placed next to four honest providers,
# ATTEMPTS times each (100 unless given), with the real trainer library (training, screens,
# replays, the daemon's fraud desk) against the real pallets in their test runtime (audits at
# the runtime's 1%). Writes bench/reports/redteam.md and bench/reports/redteam.json.
#
# Then the honest baseline and the wrong-data attacker again in rounds four times as long
# (LONG_STEPS inner steps): the screens' fixed cost per round weighs less there, and the loss
# screen's power is different; written to the same report and to redteam-long-rounds.json.
#
# Then the honest baseline and the wrong-data attacker with each honest provider loss-screening
# SWEEP_SCREENS peers a round instead of the daemon's number: what each number catches against
# what it costs; written to the same report and to redteam-screens.json.
#
# Last, each attacker as a real `grid-trainer provide` process next to honest ones on a dev
# node (tests/tests/attackers.rs, minutes each; E2E=0 skips them), until the chain caught it;
# their outcomes go to the report and to redteam.json's "end_to_end".
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
long_steps=120
"$CARGO_TARGET_DIR/release/grid-redteam" --attempts "$attempts" --steps "$long_steps" --only none,wrong \
	--out "$out.tmp-redteam/long" 2> "$out/redteam-long-rounds.log"
sweep_screens="1 3"
for screens in $sweep_screens; do
	"$CARGO_TARGET_DIR/release/grid-redteam" --attempts "$attempts" --screens "$screens" --only none,wrong \
		--out "$out.tmp-redteam/screens-$screens" 2> "$out.tmp-redteam/screens-$screens.log"
done
e2e="$out.tmp-redteam/e2e"
mkdir -p "$e2e"
if [ "${E2E:-1}" != 0 ]; then
	# A failed test still leaves its outcome (not caught) unless it could not run at all.
	GRID_REDTEAM_E2E="$PWD/$e2e" cargo test --release --locked --workspace --test attackers \
		-- --include-ignored --test-threads 1 > "$out/redteam-e2e.log" 2>&1 || true
fi
python3 bench/redteam_e2e.py "$e2e" "$out.tmp-redteam/redteam.json" > "$out.tmp-redteam/e2e.md"
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
	echo "### Rounds of $long_steps inner steps"
	echo
	echo "The honest baseline and the wrong-data attacker in rounds four times as long (\`--steps $long_steps\`;"
	echo "headline figures in \`redteam-long-rounds.json\`):"
	echo
	cat "$out.tmp-redteam/long/redteam.md"
	echo
	echo "### Screens per round"
	echo
	daemon_screens=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["screens_per_desk"])' "$out.tmp-redteam/redteam.json")
	echo "Each honest provider loss-screens $daemon_screens peers a round above (the daemon's \`GAUNTLET_PEERS\`); the honest"
	echo "baseline and the wrong-data attacker with ${sweep_screens// / and } instead (\`--screens N\`; headline figures in"
	echo "\`redteam-screens.json\`):"
	for screens in $sweep_screens; do
		echo
		echo "$screens per round:"
		echo
		cat "$out.tmp-redteam/screens-$screens/redteam.md"
	done
	echo
	cat "$out.tmp-redteam/e2e.md"
	echo
	cat bench/redteam/METHOD.md
} > "$out/redteam.md"
mv "$out.tmp-redteam/redteam.json" "$out/redteam.json"
mv "$out.tmp-redteam/long/redteam.json" "$out/redteam-long-rounds.json"
python3 - "$out.tmp-redteam" $sweep_screens > "$out/redteam-screens.json" <<'PY'
import json, sys
root, counts = sys.argv[1], sys.argv[2:]
print(json.dumps({c: json.load(open(f"{root}/screens-{c}/redteam.json")) for c in counts}, indent=2))
PY
rm -rf "$out.tmp-redteam"
echo "wrote $out/redteam.md, $out/redteam.json, $out/redteam-long-rounds.json and $out/redteam-screens.json"
