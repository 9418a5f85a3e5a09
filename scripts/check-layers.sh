#!/usr/bin/env bash
# Holds grid-trainer's layering (see trainer/src/lib.rs): arrows point down only.
#   daemon/ -> chain/, net/ -> round/ -> the engine (every other module)
# - round/ names neither net, chain nor daemon;
# - net/ and chain/ never name each other, nor the daemon;
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

engine=()
for entry in *; do
	case "$entry" in
	# config.rs is the trainer's config file, read by the daemon and the chain's spec.
	round | net | chain | daemon | bin | lib.rs | config.rs) ;;
	*) engine+=("$entry") ;;
	esac
done

forbid round -- net chain daemon
forbid net -- chain daemon
forbid chain -- net daemon
forbid "${engine[@]}" -- round net chain daemon

if ((failed)); then
	exit 1
fi
echo "layers: round, net, chain and the engine name only what lies below them"
