#!/usr/bin/env bash
# Holds grid-trainer's layering (see trainer/src/lib.rs): arrows point down only.
#   daemon/ -> chain/, net/ -> round/ -> the engine (every other module)
# - round/ names neither net, chain nor daemon;
# - net/ and chain/ never name each other, nor the daemon, nor the engine (but net's shaper
#   uses the engine's seeded RNG);
# - the engine names none of round, net, chain or daemon.
# A `use` of a forbidden wing anywhere in a file (tests included) fails the check.
set -euo pipefail
cd "$(dirname "$0")/../trainer/src"

failed=0
# forbid DIR_OR_FILES... -- WINGS...: fails when any file names crate::<wing>.
forbid() {
	local files=() wings=() seen_sep=0
	for arg in "$@"; do
		if [ "$arg" = "--" ]; then seen_sep=1; continue; fi
		if ((seen_sep)); then wings+=("$arg"); else files+=("$arg"); fi
	done
	local pattern
	pattern="crate::($(IFS='|'; echo "${wings[*]}"))\\b|^\\s*($(IFS='|'; echo "${wings[*]}"))::"
	local hits
	# Comments may name any wing.
	if hits=$(grep -rnE "$pattern" "${files[@]}" 2>/dev/null | grep -vE '^[^:]+:[0-9]+:\s*//'); then
		echo "layering broken: ${files[*]} must not name ${wings[*]}:" >&2
		echo "$hits" >&2
		failed=1
	fi
}

engine=() engine_modules=()
for entry in *; do
	case "$entry" in
	round | net | chain | daemon | bin | lib.rs) ;;
	*)
		engine+=("$entry")
		engine_modules+=("${entry%.rs}")
		;;
	esac
done
# The transport's link shaper draws from the engine's seeded RNG; nothing else of the engine
# is the adapters' business.
net_may_not=()
for module in "${engine_modules[@]}"; do
	[ "$module" = rng ] || net_may_not+=("$module")
done

forbid round -- net chain daemon
forbid net -- chain daemon "${net_may_not[@]}"
forbid chain -- net daemon "${engine_modules[@]}"
forbid "${engine[@]}" -- round net chain daemon

if ((failed)); then
	exit 1
fi
echo "layers: round, net, chain and the engine name only what lies below them"
