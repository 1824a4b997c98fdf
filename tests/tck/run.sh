#!/usr/bin/env bash
# Runs the A2A TCK against `a2a-mod serve` and, as the yardstick, against the a2a-sdk 1.3 peer
# worker (tests/peers/worker.py), at `--level must` and `--level should` over JSON-RPC and
# HTTP+JSON, and compares the two: exit 1 when the SDK passes a test serve does not.
#
# The TCK is no package: it runs from a copy of github:a2aproject/a2a-tck (branch 1.0-dev) beside
# the repository, named by A2A_TCK_DIR; without one this prints one line and exits 0. Its
# dependencies are installed (pinned, tests/tck/requirements.txt) into $A2A_PEERS_DIR/venv-tck.
# serve runs an exec agent (a shell line that answers at once), on 127.0.0.1, no token: the TCK
# sends none. Then a second serve, Claude Code behind it against a fake Messages API
# (tests/tck/model.py) whose runs first ask to run a command, so every task waits on a permission
# question: the TCK's live-task tests (cancel, subscribe, several streams, history) run there,
# and none may fail but those excused below as the TCK's own. Reports land in $A2A_TCK_OUT
# (default target/tck). With A2A_TCK_MAIN_DIR naming a copy of the TCK's main branch, its older
# `mandatory` category runs against both too. Both servers support push notifications (the SDK with its own store and
# sender), so the TCK's PUSH-* tests run against both; the webhook is the TCK's, on 127.0.0.1.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
if [ -z "${A2A_TCK_DIR:-}" ] || [ ! -f "${A2A_TCK_DIR}/run_tck.py" ]; then
    echo "tests/tck/run.sh: skipped: A2A_TCK_DIR names no copy of github:a2aproject/a2a-tck (branch 1.0-dev)"
    exit 0
fi
peers="${A2A_PEERS_DIR:-$repo/target/peers}"
out="${A2A_TCK_OUT:-$repo/target/tck}"
bin="${A2A_MOD_BIN:-$repo/target/debug/a2a-mod}"
python="${A2A_PEERS_PYTHON:-python3}"
mkdir -p "$out"

venv="$peers/venv-tck"
stamp="$venv/.requirements"
if ! cmp -s "$here/requirements.txt" "$stamp" 2>/dev/null; then
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
    cp "$here/requirements.txt" "$stamp"
fi

work="$(mktemp -d)"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

# Reads a server's first stdout line (its URL) as soon as it is written.
first_line() {
    local file="$1" i
    for i in $(seq 1 300); do
        if [ -s "$file" ]; then
            head -n 1 "$file"
            return 0
        fi
        sleep 0.1
    done
    echo "tests/tck/run.sh: $file: no URL within 30 s" >&2
    return 1
}

mkdir -p "$work/home" "$work/agent"
printf 'read -r line; printf "Hello from TCK"\n' >"$work/agent/agent.sh"
# The TCK's webhook listens on 127.0.0.1: private addresses allowed (serve's default refuses them).
cat >"$work/home/config.toml" <<TOML
[serve]
push_allow_private = true
[serve.agents.tck]
dir = "$work/agent"
exec = ["/bin/sh", "agent.sh"]
TOML
A2A_MOD_HOME="$work/home" "$bin" serve --listen 127.0.0.1:0 >"$work/serve.out" 2>"$out/serve.log" &
pids+=($!)
"$peers/venv-v1/bin/python" "$repo/tests/peers/worker.py" --rest --push >"$work/sdk.out" 2>"$out/sdk.log" &
pids+=($!)
serve_url="$(first_line "$work/serve.out")"
serve_root="${serve_url%/tck}"
sdk_url="$(first_line "$work/sdk.out")"

# The live run: Claude Code (the real CLI, `claude` on PATH or A2A_MOD_CLAUDE_BIN) in a home of its
# own that skips every start-up dialog, its model the fake.
claude_home="$work/claude-home"
live="$work/live"
mkdir -p "$claude_home" "$live/build" "$work/live-a2a"
# Every TCK prerequisite is a run that waits: many at once (serve's default is 2), and one that
# nobody answers gives up soon (a conversation's runs take turns, and the TCK sends many tasks
# into one context, each read within 30 s). Well inside the TCK's 10 s stream windows: two
# streams of one task then both see the change the give-up makes, and the run's end after it,
# instead of one window closing just before it and the other just after.
cat >"$work/live-a2a/config.toml" <<TOML
[serve]
max_concurrent = 16
push_allow_private = true
[serve.agents.live]
dir = "$live"
ask_timeout_s = 5
TOML
key="sk-ant-api03-a2a-mod-fake-key-for-tests-0123456789abcdefghij"
cat >"$claude_home/.claude.json" <<JSON
{"hasCompletedOnboarding": true, "theme": "dark", "autoUpdates": false,
 "customApiKeyResponses": {"approved": ["${key: -20}"], "rejected": []},
 "projects": {"$live": {"allowedTools": [], "hasTrustDialogAccepted": true,
                        "hasCompletedProjectOnboarding": true}}}
JSON
"$python" "$here/model.py" >"$work/model.out" 2>"$out/model.log" &
pids+=($!)
model_url="$(first_line "$work/model.out")"
env -u CLAUDECODE -u CLAUDE_CODE_ENTRYPOINT -u CLAUDE_CODE_SESSION_ID -u ANTHROPIC_AUTH_TOKEN \
    HOME="$claude_home" A2A_MOD_HOME="$work/live-a2a" ANTHROPIC_BASE_URL="$model_url" \
    ANTHROPIC_API_KEY="$key" DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 \
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
    "$bin" serve --listen 127.0.0.1:0 >"$work/live.out" 2>"$out/live-serve.log" &
pids+=($!)
live_url="$(first_line "$work/live.out")"
live_root="${live_url%/*}"

# Tests that fail for the TCK's reasons, not serve's (the a2a-sdk server fails them too), each
# with why.
excused=(
    # A v1-only schema with additionalProperties false: serve's card keeps the v0.3 fields
    # (url, preferredTransport, protocolVersion, additionalInterfaces) for 0.3 clients.
    test_agent_card_validates_against_schema
    # The TCK's own agent answers set texts, files, data or a bare message by the messageId's
    # prefix; a real agent does what the message says.
    test_task_has_text_artifact
    test_task_has_file_artifact
    test_task_has_file_url_artifact
    test_task_has_data_artifact
    test_returns_message_with_text_part
)

status=0
(cd "$A2A_TCK_DIR" && "$venv/bin/python" run_tck.py --sut-host "$live_root" --level must \
    --transport jsonrpc,http_json -- --webhook-host=127.0.0.1 -q -p no:cacheprovider \
    >"$out/live-must.log" 2>&1) || true
cp "$A2A_TCK_DIR/reports/junitreport.xml" "$out/live-must.xml"
"$venv/bin/python" "$here/compare.py" --live "$out/live-must.xml" "${excused[@]}" || status=1

for level in must should; do
    for side in sdk serve; do
        url="$sdk_url"
        [ "$side" = serve ] && url="$serve_root"
        (cd "$A2A_TCK_DIR" && "$venv/bin/python" run_tck.py --sut-host "$url" --level "$level" \
            --transport jsonrpc,http_json -- --webhook-host=127.0.0.1 -q -p no:cacheprovider \
            >"$out/$side-$level.log" 2>&1) || true
        cp "$A2A_TCK_DIR/reports/junitreport.xml" "$out/$side-$level.xml"
    done
    # A test serve passes in the live run counts too (the push deliveries need a task that waits).
    live_report=()
    [ "$level" = must ] && live_report=("$out/live-must.xml")
    "$venv/bin/python" "$here/compare.py" "$level" "$out/sdk-$level.xml" "$out/serve-$level.xml" \
        "${live_report[@]}" || status=1
done

# The TCK's older `mandatory` category (its main branch, A2A_TCK_MAIN_DIR), against the same two
# servers: serve must pass what the SDK passes; what fails for both is listed with why in
# docs/serve.md.
if [ -n "${A2A_TCK_MAIN_DIR:-}" ] && [ -d "${A2A_TCK_MAIN_DIR}/tests/mandatory" ]; then
    venv_main="$peers/venv-tck-main"
    stamp_main="$venv_main/.requirements"
    if ! cmp -s "$here/requirements-main.txt" "$stamp_main" 2>/dev/null; then
        rm -rf "$venv_main"
        "$python" -m venv "$venv_main"
        "$venv_main/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements-main.txt"
        cp "$here/requirements-main.txt" "$stamp_main"
    fi
    for side in sdk serve; do
        url="$sdk_url"
        [ "$side" = serve ] && url="$serve_root"
        (cd "$A2A_TCK_MAIN_DIR" && "$venv_main/bin/python" -m pytest tests/mandatory/ \
            -m "mandatory or mandatory_protocol or mandatory_jsonrpc" --sut-url="$url" \
            --test-scope=all -q -p no:cacheprovider --junitxml="$out/$side-mandatory.xml" \
            >"$out/$side-mandatory.log" 2>&1) || true
    done
    "$venv/bin/python" "$here/compare.py" mandatory "$out/sdk-mandatory.xml" \
        "$out/serve-mandatory.xml" || status=1
fi
exit "$status"
