#!/usr/bin/env bash
# Installs what building and testing Grid needs on a fresh Debian machine with rustup:
# system packages (protoc for the networking crates' protobufs, a C toolchain, python3 and venv
# for the scripts' helpers and the Hugging Face export test, Node.js and npm for zombienet and
# the web UI, procps for zombienet's process control, chromium for the web UI's browser tests),
# the pinned Rust toolchain with the runtime's wasm target, and a Python environment with
# `transformers`. Safe to run again: it skips what is there.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(protobuf-compiler gcc g++ make pkg-config git curl ca-certificates python3 python3-venv procps chromium)
# Node.js and npm for zombienet and the web UI; a machine that has them already keeps its own.
command -v node >/dev/null && command -v npm >/dev/null || APT_PACKAGES+=(nodejs npm)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
	echo "setup: installing ${missing[*]}"
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO="sudo"
	export DEBIAN_FRONTEND=noninteractive
	$SUDO apt-get install -y --no-install-recommends "${missing[@]}" ||
		{ $SUDO apt-get update && $SUDO apt-get install -y --no-install-recommends "${missing[@]}"; }
fi

# The web UI's toolchain (Vite 8) needs Node.js 20.19 or later; Debian 12's own is 18.
if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)'; then
	echo "setup: Node.js $(node --version) is too old: the web UI needs 20.19 or later" >&2
	exit 1
fi

if ! command -v rustup >/dev/null; then
	echo "setup: rustup is required (https://rustup.rs)" >&2
	exit 1
fi
toolchain=$(sed -n 's/^channel = "\(.*\)"/\1/p' rust-toolchain.toml)
rustup toolchain install "$toolchain" --profile minimal --component rustfmt,clippy >/dev/null
rustup target add wasm32v1-none --toolchain "$toolchain" >/dev/null

# Python `transformers` for the test that loads Grid's exported models (see
# scripts/python/requirements.txt), in its own environment outside the clone; remade when the
# requirements change.
pyenv="${GRID_PYTHON_ENV:-$HOME/.cache/grid-python}"
want=$(sha256sum scripts/python/requirements.txt | cut -d' ' -f1)
if [ "$(cat "$pyenv/.requirements" 2>/dev/null)" != "$want" ]; then
	echo "setup: installing the Python test environment in $pyenv"
	rm -rf "$pyenv"
	python3 -m venv "$pyenv"
	"$pyenv/bin/pip" install --quiet --disable-pip-version-check -r scripts/python/requirements.txt
	echo "$want" >"$pyenv/.requirements"
fi
