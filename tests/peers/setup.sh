#!/usr/bin/env bash
# Creates the two Python venvs that run tests/peers/worker.py on the real a2a-sdk:
#   $A2A_PEERS_DIR/venv-v1   a2a-sdk 1.x  (v1.0 + v0.3 compatibility), requirements-v1.txt
#   $A2A_PEERS_DIR/venv-v03  a2a-sdk 0.3  (v0.3 only),                 requirements-v03.txt
# A2A_PEERS_DIR defaults to <repo>/target/peers. Idempotent: a venv whose stamp matches its
# requirements file and interpreter is left alone, so a second run takes well under a second.
# Env: A2A_PEERS_PYTHON picks the interpreter (default python3, must be >= 3.10).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
dir="${A2A_PEERS_DIR:-$repo/target/peers}"
python="${A2A_PEERS_PYTHON:-python3}"

die() {
    echo "tests/peers/setup.sh: $*" >&2
    exit 1
}

command -v "$python" >/dev/null 2>&1 ||
    die "\"$python\" not found — install Python >= 3.10 or set A2A_PEERS_PYTHON"
py_version="$("$python" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')" ||
    die "\"$python\" does not run"
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
    die "a2a-sdk needs Python >= 3.10, \"$python\" is $py_version — set A2A_PEERS_PYTHON"

mkdir -p "$dir" || die "cannot create \"$dir\""

# Two test runs starting at once must not build the same venv twice.
if command -v flock >/dev/null 2>&1; then
    exec 9>"$dir/.setup.lock"
    flock 9
fi

setup_venv() {
    local name="$1"
    local req="$here/requirements-$name.txt"
    local venv="$dir/venv-$name"
    local stamp="$venv/.a2a-peers-stamp"
    local want
    [[ -f "$req" ]] || die "missing \"$req\""
    want="$(sha256sum "$req" | cut -d' ' -f1) python-$py_version"

    if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
        echo "peers: venv-$name up to date ($venv)"
        return 0
    fi

    echo "peers: building venv-$name in $venv"
    rm -rf "$venv"
    "$python" -m venv "$venv" ||
        die "\"$python -m venv\" failed — on Debian/Ubuntu install python3-venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$req" ||
        die "pip install -r \"$req\" failed (network to PyPI needed on first run)"
    "$venv/bin/python" -c 'import a2a.server, uvicorn' ||
        die "venv-$name built but cannot import a2a.server and uvicorn"
    echo "$want" >"$stamp"
    echo "peers: venv-$name ready: a2a-sdk $("$venv/bin/python" -c \
        'from importlib.metadata import version; print(version("a2a-sdk"))')"
}

setup_venv v1
setup_venv v03
