#!/usr/bin/env bash
# Installs the real A2A SDKs the peer workers run on:
#   $A2A_PEERS_DIR/venv-v1   a2a-sdk 1.x  (v1.0 + v0.3 compatibility), requirements-v1.txt
#   $A2A_PEERS_DIR/venv-v03  a2a-sdk 0.3  (v0.3 only),                 requirements-v03.txt
#   $A2A_PEERS_DIR/venv-adk  google-adk[a2a] for adk_worker.py,        requirements-adk.txt
#   $A2A_PEERS_DIR/venv-maf  agent-framework-a2a for maf_worker.py,    requirements-maf.txt
#   $A2A_PEERS_DIR/venv-sdk  claude-agent-sdk for sdk_driver.py,       requirements-sdk.txt
#   $A2A_PEERS_DIR/venv-tools check-jsonschema for the release workflow, requirements-tools.txt
#   $A2A_PEERS_DIR/js        @a2a-js/sdk + express for js/worker.mjs,  js/package-lock.json (npm ci)
# A2A_PEERS_DIR defaults to <repo>/target/peers. Idempotent: a venv or the js dir whose stamp
# matches its requirements/lock file and interpreter is left alone, so a second run takes well
# under a second. All seven are built at once (background jobs) and are independent: one failing
# does not stop the others, and the script exits 1 if any failed.
# Env: A2A_PEERS_PYTHON picks the interpreter (default python3, must be >= 3.10);
#      A2A_PEERS_NODE picks node (default node, must be >= 20; npm is taken from beside it or PATH).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
dir="${A2A_PEERS_DIR:-$repo/target/peers}"
python="${A2A_PEERS_PYTHON:-python3}"
node="${A2A_PEERS_NODE:-node}"

die() {
    echo "tests/peers/setup.sh: $*" >&2
    exit 1
}

mkdir -p "$dir" || die "cannot create \"$dir\""

# Two test runs starting at once must not build the same venv twice.
if command -v flock >/dev/null 2>&1; then
    exec 9>"$dir/.setup.lock"
    flock 9
fi

# What each venv must be able to import once built, and the distribution whose version it reports.
declare -A check_import=(
    [v1]="a2a.server, uvicorn, libfaketime"
    [v03]="a2a.server, uvicorn"
    [adk]="a2a.server, uvicorn, google.adk.a2a.utils.agent_to_a2a"
    [maf]="a2a.server, uvicorn, starlette, agent_framework.a2a"
    [sdk]="claude_agent_sdk"
    [tools]="check_jsonschema"
)
declare -A check_dist=([v1]=a2a-sdk [v03]=a2a-sdk [adk]=google-adk [maf]=agent-framework-a2a [sdk]=claude-agent-sdk
    [tools]=check-jsonschema)

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
    # --no-compile: byte-compiling every installed module (the frameworks bring thousands) took
    # more CPU than the rest of the install, beside the test build; Python compiles the few
    # modules a test imports the first time it imports them, and keeps them (tests/run.sh lets
    # it write them).
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input --no-compile \
        -r "$req" ||
        die "pip install -r \"$req\" failed (network to PyPI needed on first run)"
    "$venv/bin/python" -c "import ${check_import[$name]}" ||
        die "venv-$name built but cannot import ${check_import[$name]}"
    echo "$want" >"$stamp"
    echo "peers: venv-$name ready: ${check_dist[$name]} $("$venv/bin/python" -c \
        "from importlib.metadata import version; print(version('${check_dist[$name]}'))")"
}

check_python() {
    command -v "$python" >/dev/null 2>&1 ||
        die "\"$python\" not found — install Python >= 3.10 or set A2A_PEERS_PYTHON"
    py_version="$("$python" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')" ||
        die "\"$python\" does not run"
    "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
        die "a2a-sdk needs Python >= 3.10, \"$python\" is $py_version — set A2A_PEERS_PYTHON"
}

# @a2a-js/sdk and express, exactly as js/package-lock.json pins them, in $dir/js (outside the
# repo tree; js/worker.mjs loads them from there).
setup_js() {
    local js="$dir/js"
    local stamp="$js/.a2a-peers-stamp"
    local node_version npm want
    command -v "$node" >/dev/null 2>&1 ||
        die "\"$node\" not found — install Node.js >= 20 (with npm) or set A2A_PEERS_NODE"
    node_version="$("$node" -p 'process.versions.node')" || die "\"$node\" does not run"
    "$node" -e 'process.exit(Number(process.versions.node.split(".")[0]) < 20 ? 1 : 0)' ||
        die "@a2a-js/sdk needs Node.js >= 20, \"$node\" is $node_version — set A2A_PEERS_NODE"
    npm="$(dirname "$(command -v "$node")")/npm"
    [[ -x "$npm" ]] || npm="$(command -v npm)" || die "npm not found beside \"$node\" or on PATH"
    want="$(cat "$here/js/package.json" "$here/js/package-lock.json" | sha256sum | cut -d' ' -f1) node-$node_version"

    if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -d "$js/node_modules/@a2a-js/sdk" ]]; then
        echo "peers: js up to date ($js)"
        return 0
    fi

    echo "peers: installing @a2a-js/sdk in $js"
    rm -rf "$js"
    mkdir -p "$js" || die "cannot create \"$js\""
    cp "$here/js/package.json" "$here/js/package-lock.json" "$js/"
    # npm ci: exactly the lockfile, no resolution; no install scripts (none are needed).
    (cd "$js" && "$npm" ci --no-audit --no-fund --ignore-scripts --loglevel=error </dev/null) ||
        die "npm ci in \"$js\" failed (network to the npm registry needed on first run)"
    "$node" "$here/js/worker.mjs" --modules "$js" --check ||
        die "js built but worker.mjs cannot load @a2a-js/sdk and express from \"$js\""
    echo "$want" >"$stamp"
    echo "peers: js ready: @a2a-js/sdk $("$node" -p "require('$js/node_modules/@a2a-js/sdk/package.json').version")"
}

# Every part in its own background subshell (a `die` there ends that part only), all at once:
# cold, the wall time is the slowest part (venv-adk) rather than the sum.
failed=0
pids=()
names=()
if (check_python); then
    py_version="$("$python" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')"
    for name in v1 v03 adk maf sdk tools; do
        (setup_venv "$name") &
        pids+=("$!")
        names+=("venv-$name")
    done
else
    failed=1
fi
(setup_js) &
pids+=("$!")
names+=("js")
for i in "${!pids[@]}"; do
    if ! wait "${pids[$i]}"; then
        echo "tests/peers/setup.sh: ${names[$i]} failed" >&2
        failed=1
    fi
done
exit "$failed"
