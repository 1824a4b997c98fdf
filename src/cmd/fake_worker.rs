//! `a2a-mod fake-worker`: runs the fake worker until SIGTERM/SIGINT. Its first stdout line is the
//! base URL (scripts and tests read it), and it writes nothing else to stdout.

use super::Run;
use super::shell::{user_command, wait_for_stop_signal};
use crate::cli::{FakeStreaming, FakeWorkerArgs};
use a2a_mod_fake_worker::{FakeWorker, FakeWorkerOptions, StreamMode};
use anyhow::{Context as _, anyhow};
use std::io::Write as _;
use std::time::Duration;

impl Run for FakeWorkerArgs {
    fn run(self) -> anyhow::Result<i32> {
        user_command()?;
        run_command(&self)?;
        Ok(a2a_mod_claude::error::EXIT_OK)
    }
}

/// Checks the arguments, serves, prints the URL, and returns `Ok` on SIGTERM/SIGINT.
fn run_command(args: &FakeWorkerArgs) -> anyhow::Result<()> {
    let opts = options(args, a2a_mod_os::env::secret)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("fake-worker: cannot start the async runtime")?;
    rt.block_on(async {
        let worker = FakeWorker::start(opts)
            .await
            .context("fake-worker: cannot start — pick another --port, or omit it")?;
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", worker.url).and_then(|()| out.flush())?;
        drop(out);
        wait_for_stop_signal().await?;
        worker.stop().await;
        Ok(())
    })
}

/// Pure argument checking; `env` reads a variable (injected so tests need no `set_var`).
fn options(
    args: &FakeWorkerArgs,
    env: impl Fn(&str) -> Option<String>,
) -> anyhow::Result<FakeWorkerOptions> {
    let bearer_token = match &args.bearer_env {
        None => None,
        Some(var) => match env(var) {
            Some(t) if !t.trim().is_empty() => Some(t.trim().to_string()),
            _ => {
                return Err(anyhow!(
                    "fake-worker: environment variable \"{var}\" is not set — export it, or drop --bearer-env"
                ));
            }
        },
    };
    let oauth_ttl = match args.oauth_ttl {
        None => None,
        Some(secs) => Some(
            Duration::try_from_secs_f64(secs)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    anyhow!("fake-worker: --oauth-ttl {secs} is not a positive number of seconds — pass e.g. --oauth-ttl 60")
                })?,
        ),
    };
    Ok(FakeWorkerOptions {
        port: args.port,
        bearer_token,
        v03_only: args.v03_only,
        oauth_ttl,
        oauth_claimed_ttl: args.oauth_claimed_ttl,
        log: args.log.clone(),
        stream: match args.streaming {
            FakeStreaming::Off => StreamMode::Off,
            FakeStreaming::On => StreamMode::On,
            FakeStreaming::Drop => StreamMode::Drop,
            FakeStreaming::Mute => StreamMode::Mute,
            FakeStreaming::Garbage => StreamMode::Garbage,
            FakeStreaming::Http404 => StreamMode::Http404,
            FakeStreaming::RpcError => StreamMode::RpcError,
        },
        subscribe_faults_only: args.subscribe_faults_only,
        cancel_on_disconnect: args.cancel_on_disconnect,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> FakeWorkerArgs {
        FakeWorkerArgs {
            port: None,
            bearer_env: None,
            v03_only: false,
            oauth_ttl: None,
            oauth_claimed_ttl: None,
            log: None,
            streaming: FakeStreaming::Off,
            subscribe_faults_only: false,
            cancel_on_disconnect: false,
        }
    }

    #[test]
    fn bearer_env_must_be_set() {
        let a = FakeWorkerArgs {
            bearer_env: Some("FAKE_TOKEN".into()),
            ..args()
        };
        let err = options(&a, |_| None).unwrap_err();
        assert_eq!(
            a2a_mod_claude::error::render(&err),
            "a2a-mod: fake-worker: environment variable \"FAKE_TOKEN\" is not set — export it, or drop --bearer-env"
        );
        let ok = options(&a, |v| (v == "FAKE_TOKEN").then(|| "t0k".to_string())).unwrap();
        assert_eq!(ok.bearer_token.as_deref(), Some("t0k"));
    }

    #[test]
    fn oauth_ttl_must_be_positive() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let a = FakeWorkerArgs {
                oauth_ttl: Some(bad),
                ..args()
            };
            assert!(options(&a, |_| None).is_err(), "{bad}");
        }
        let a = FakeWorkerArgs {
            oauth_ttl: Some(0.5),
            ..args()
        };
        assert_eq!(
            options(&a, |_| None).unwrap().oauth_ttl,
            Some(Duration::from_millis(500))
        );
    }
}
