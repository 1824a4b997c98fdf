#!/bin/sh
# Installs a2a-mod from this checkout: builds it in release mode, copies the binary to a folder on
# PATH (~/.local/bin, or $CARGO_HOME/bin when only that one is on PATH), then runs
# `a2a-mod install` (the Claude Code plugin, status line and permissions; arguments are passed on,
# e.g. `./install.sh --scope project`). Safe to run again: each step replaces or keeps what is there.
set -eu

cd "$(dirname "$0")"

if ! command -v cargo >/dev/null 2>&1; then
    echo "install.sh: cargo not found — install Rust from https://rustup.rs, then run ./install.sh again" >&2
    exit 1
fi

echo "Building a2a-mod (release; a few minutes the first time)..."
cargo build --release --locked
built="${CARGO_TARGET_DIR:-target}/release/a2a-mod"

on_path() {
    case ":$PATH:" in *":$1:"*) return 0 ;; *) return 1 ;; esac
}
local_bin="$HOME/.local/bin"
cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"
if on_path "$local_bin"; then
    dir="$local_bin"
elif on_path "$cargo_bin"; then
    dir="$cargo_bin"
else
    dir="$local_bin"
    path_hint=1
fi
mkdir -p "$dir"
# Copy then rename, so a running a2a-mod (the status line, a poller) never sees half a file.
cp "$built" "$dir/.a2a-mod.new.$$"
chmod 755 "$dir/.a2a-mod.new.$$"
mv -f "$dir/.a2a-mod.new.$$" "$dir/a2a-mod"
echo "Installed $dir/a2a-mod ($("$dir/a2a-mod" --version))"

"$dir/a2a-mod" install "$@"

echo
if [ -n "${path_hint:-}" ]; then
    echo "Note: $dir is not on your PATH. Add it (e.g. in ~/.profile): export PATH=\"$dir:\$PATH\""
fi
echo "Next steps:"
echo "  a2a-mod demo                                  # the whole loop with the embedded fake worker"
echo "  a2a-mod worker add <alias> <url> [--bearer-env VAR]   # a real worker"
echo "  claude                                        # in any project: Claude now has the a2a tools"
echo "  a2a-mod doctor                                # if anything looks wrong"
