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
# Then the honest baseline and the wrong-data attacker with the fraud desk the daemon ran
# before segment checks (two loss screens a provider and round, no segment checks), side by
# side: what each catches against what it costs; written to the same report and to
# redteam-screens.json. Beside it, the honest baseline and the griefing challenger (whose
# challenges committees judge) with committees that replay every claim in full, as before
# they followed trajectories; to the same report and redteam-committees.json.
#
# Last, each attacker as a real `grid-trainer provide` process next to honest ones on a dev
# node (tests/tests/attackers.rs, minutes each; E2E=0 skips them), until the chain caught it;
# their outcomes go to the report, to redteam.json's "end_to_end" and, as they came, to
# bench/reports/redteam-e2e/; E2E=reuse takes those instead of running them again (when only
# the in-process figures are measured again), and the report says so.
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
"$CARGO_TARGET_DIR/release/grid-redteam" --attempts "$attempts" --out "$out.tmp-redteam" 2> "$out/redteam.log" &
suite=$!
# Beside it (two cores; each suite runs on about one).
long_steps=120
"$CARGO_TARGET_DIR/release/grid-redteam" --attempts "$attempts" --steps "$long_steps" --only none,wrong \
	--out "$out.tmp-redteam/long" 2> "$out/redteam-long-rounds.log"
wait "$suite"
"$CARGO_TARGET_DIR/release/grid-redteam" --attempts "$attempts" --committee-replays --only none,grief \
	--out "$out.tmp-redteam/replays" 2> "$out.tmp-redteam/replays.log" &
replays=$!
"$CARGO_TARGET_DIR/release/grid-redteam" --attempts "$attempts" --screens 2 --segments 0 --only none,wrong \
	--out "$out.tmp-redteam/screens-2" 2> "$out.tmp-redteam/screens-2.log"
wait "$replays"
e2e="$out.tmp-redteam/e2e"
mkdir -p "$e2e"
kept="$out/redteam-e2e"
if [ "${E2E:-1}" = reuse ]; then
	cp "$kept"/*.json "$e2e"/
elif [ "${E2E:-1}" != 0 ]; then
	# A failed test still leaves its outcome (not caught) unless it could not run at all.
	GRID_REDTEAM_E2E="$PWD/$e2e" cargo test --release --locked --workspace --test attackers \
		-- --include-ignored --test-threads 1 > "$out/redteam-e2e.log" 2>&1 || true
	rm -rf "$kept"
	mkdir -p "$kept"
	cp "$e2e"/*.json "$kept"/ 2> /dev/null || true
fi
python3 bench/redteam_e2e.py "$e2e" "$out.tmp-redteam/redteam.json" > "$out.tmp-redteam/e2e.md"
if [ "${E2E:-1}" = reuse ]; then
	echo "The end-to-end outcomes above are those an earlier run kept in \`redteam-e2e/\` (\`E2E=reuse\`), not measured again." \
		>> "$out.tmp-redteam/e2e.md"
fi
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
	echo "### Loss screens instead of segment checks"
	echo
	daemon_rate=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["segment_checks_per_desk"])' "$out.tmp-redteam/redteam.json")
	echo "Each honest provider runs $daemon_rate segment checks a round on average above (the daemon's \`SEGMENT_RATE\`) and no"
	echo "loss screens; the honest baseline and the wrong-data attacker with the desk the daemon ran before: two loss screens"
	echo "a provider and round and no segment checks (\`--screens 2 --segments 0\`; headline figures in \`redteam-screens.json\`):"
	echo
	cat "$out.tmp-redteam/screens-2/redteam.md"
	echo
	echo "### Committees replaying in full"
	echo
	echo "Committees above judge a challenged or audited claim by its trajectory (its start, its end and one segment"
	echo "drawn from the committee's randomness) and replay it in full only when that does not hold; the honest baseline"
	echo "and the griefing challenger (whose challenges of honest work committees judge) with committees that replay every"
	echo "claim in full, as before (\`--committee-replays\`; headline figures in \`redteam-committees.json\`):"
	echo
	cat "$out.tmp-redteam/replays/redteam.md"
	echo
	cat "$out.tmp-redteam/e2e.md"
	echo
	cat bench/redteam/METHOD.md
} > "$out/redteam.md"
mv "$out.tmp-redteam/redteam.json" "$out/redteam.json"
mv "$out.tmp-redteam/long/redteam.json" "$out/redteam-long-rounds.json"
python3 - "$out.tmp-redteam" > "$out/redteam-screens.json" <<'PY'
import json, sys
root = sys.argv[1]
print(json.dumps({"loss_screens_2_no_segment_checks": json.load(open(f"{root}/screens-2/redteam.json"))}, indent=2))
PY
mv "$out.tmp-redteam/replays/redteam.json" "$out/redteam-committees.json"
rm -rf "$out.tmp-redteam"
echo "wrote $out/redteam.md, $out/redteam.json, $out/redteam-long-rounds.json, $out/redteam-screens.json and $out/redteam-committees.json"
