#!/usr/bin/env bash
# The test command (README): prepares the Python a2a-sdk peers when python3 is available,
# then runs the core's doctests and `cargo test --all-targets` (every crate of the workspace)
# with any extra arguments forwarded, e.g.
#   tests/run.sh                      everything
#   tests/run.sh -- --nocapture       forwarded to the test binaries
# Peer tests read A2A_PEERS_DIR (exported here) and skip with a message when a venv is absent,
# so a failed set-up is reported and the run goes on.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

export A2A_PEERS_DIR="${A2A_PEERS_DIR:-$repo/target/peers}"
# The peers' venvs are installed without byte-compiling (setup.sh): a peer's first start compiles
# what it imports and writes the caches into its venv, and every later start reads them (an
# a2a-sdk worker starts in 0.47 s instead of 1.04, google-adk's in 1.3 s instead of 2.9). An
# environment that forbids writing them (PYTHONDONTWRITEBYTECODE, set in some images) would make
# each of the suite's dozens of Python starts compile it all again.
unset PYTHONDONTWRITEBYTECODE
python="${A2A_PEERS_PYTHON:-python3}"

if command -v "$python" >/dev/null 2>&1; then
    if ! tests/peers/setup.sh; then
        echo "tests/run.sh: peer set-up failed (see above); the a2a-sdk peer tests will skip" >&2
    fi
else
    echo "tests/run.sh: \"$python\" not found; the a2a-sdk peer tests will skip" >&2
fi

# Six tests at a time (libtest's default is one per core): most integration tests wait on peers,
# timers and the real Claude Code rather than compute. tests/it took 662 s with two, 357 s with
# four and about 270 s with six. Six on the 2-core CI machine, with the benches and rustdoc
# beside, starve the machine at times: what a test measures in real time must hold on a loaded
# machine (a poll woken 321 ms late, a question told by the rewake waiter because the monitor was
# not up yet: tests/it/poller.rs `cadence`, tests/it/claude_wake.rs `input_required_round_trip`).
# Six first found a real race (a monitor killed between printing and committing,
# tests/it/faults.rs), since handled. RUST_TEST_THREADS set by the caller wins.
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-6}"

# The core's doctests (`--all-targets` runs none): one shows the core cannot reach the A2A client.
cargo test --doc -p a2a-mod-core
# Every target built once; then the benches' smoke runs (a few rounds each, figures that mean
# nothing, mostly waiting on timers) beside the tests at the lowest priority, their output shown
# after the tests'. Together they are `cargo test --all-targets`.
cargo test --all-targets --no-run "$@"
benches_log="$(mktemp)"
nice -n 19 cargo test --bench '*' "$@" >"$benches_log" 2>&1 &
benches_pid=$!
rc=0
cargo test --lib --bins --tests "$@" || rc=$?
benches_rc=0
wait "$benches_pid" || benches_rc=$?
cat "$benches_log"
rm -f "$benches_log"
if ((benches_rc != 0)); then
    echo "tests/run.sh: the benches' smoke runs failed (above)" >&2
fi
exit $((rc != 0 ? rc : benches_rc))
