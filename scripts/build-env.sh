# Sourced (after setup.sh) by every script that builds: one target directory and one set of
# compiler settings, so the test command, the main job and CI share a single build. Cargo
# rebuilds the workspace's crates whenever the wrapper or its flags change, so they must match.
#
# Lint while building: clippy-driver compiles the workspace's own crates (and fails on any
# warning) while dependencies build with plain rustc, so linting costs no second `cargo check`
# of the ~900 dependencies. `cargo clippy --workspace --all-targets -- -D warnings` is the
# interactive equivalent.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/grid-target}"
# Keep the build within the machine's memory and cores.
export CARGO_INCREMENTAL=0
grid_toolchain=$(sed -n 's/^channel = "\(.*\)"/\1/p' rust-toolchain.toml)
RUSTC_WORKSPACE_WRAPPER="$(rustup which --toolchain "$grid_toolchain" clippy-driver)"
export RUSTC_WORKSPACE_WRAPPER
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
