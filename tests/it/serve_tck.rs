//! The A2A TCK (Technology Compatibility Kit) against `a2a-mod serve`, through tests/tck/run.sh:
//! every test of its `1.0-dev` line that the a2a-sdk 1.3 server passes, at `--level must` and
//! `--level should` over JSON-RPC and HTTP+JSON, serve must pass too. The TCK is on no package
//! registry: it runs from a copy beside the repository named by `A2A_TCK_DIR`, and this test
//! skips with one line without one. The spec's rules themselves are serve_conform.rs's, always.

use crate::util::bin;

#[test]
fn serve_passes_every_tck_test_the_sdk_passes() {
    let Some(dir) = std::env::var_os("A2A_TCK_DIR") else {
        println!("skipped: A2A_TCK_DIR is not set (a copy of github:a2aproject/a2a-tck, 1.0-dev)");
        return;
    };
    let repo = env!("CARGO_MANIFEST_DIR");
    let out = std::process::Command::new(format!("{repo}/tests/tck/run.sh"))
        .env("A2A_TCK_DIR", dir)
        .env("A2A_MOD_BIN", bin())
        .output()
        .expect("run tests/tck/run.sh");
    let said = String::from_utf8_lossy(&out.stdout);
    println!("{said}");
    assert!(
        out.status.success(),
        "{said}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
