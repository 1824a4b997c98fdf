//! Push notifications: what a client may register (a webhook for a task's changes, A2A v1.0
//! §4.3) and what its webhook is sent; `deliver.rs` sends it.
//!
//! - A webhook is a request a client chose to make from this machine: a URL naming a loopback,
//!   private or link-local address (or `localhost`) is refused before anything is sent unless
//!   `[serve] push_allow_private`, a name is resolved and screened the same way at each POST (the
//!   connection goes to the screened address, so DNS rebinding cannot slip past), and serve's own
//!   port is never allowed. No proxy, no redirect, 10 s per POST ([`client`]).
//! - What a POST carries ([`bodies`]): v1's StreamResponse (`statusUpdate`, `artifactUpdate`);
//!   for a v0.3 client, the task itself, as the v0.3 SDKs POST it. The answer's text, streamed to
//!   SSE readers chunk by chunk, is told to a webhook as one `artifactUpdate` of what came since
//!   its last POST, before the change that follows it.

use crate::task::{Event, Task, Update};
use crate::wire::{self, A2aError, Wire};
use a2a_mod_store::served::PushConfig;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use url::Url;

/// The most webhooks one task may have.
pub const MAX_PER_TASK: usize = 8;
/// How long a webhook has to answer a POST (the spec recommends 10–30 s).
pub const TIMEOUT: Duration = Duration::from_secs(10);
/// The longest webhook URL taken.
const MAX_URL: usize = 2048;
/// The longest token, scheme or credentials taken (each goes into a header).
const MAX_SECRET: usize = 4096;

/// The dialects a config is stored under (`PushConfig::dialect`).
const V1: &str = "1.0";
const V03: &str = "0.3";

/// Where webhooks may point.
#[derive(Debug, Clone)]
pub struct Policy {
    /// Loopback, private and link-local addresses allowed (`[serve] push_allow_private`).
    pub allow_private: bool,
    /// serve's own address: never a webhook's, whatever the config says.
    own: SocketAddr,
    /// This machine's name, which names serve too.
    machine: String,
}

impl Policy {
    pub fn new(own: SocketAddr, machine: &str, allow_private: bool) -> Policy {
        Policy {
            allow_private,
            own,
            machine: machine.to_ascii_lowercase(),
        }
    }

    /// A webhook URL as it may be used: http or https, with a host, bounded; a literal address
    /// or `localhost` where it may not go refused (a name is screened again at each POST, when
    /// it is resolved). `Err` says why, for the client.
    pub fn check(&self, url: &str) -> Result<Url, String> {
        if url.len() > MAX_URL {
            return Err(format!("the webhook URL is over {MAX_URL} characters"));
        }
        let u = Url::parse(url).map_err(|e| format!("the webhook URL is not a URL ({e})"))?;
        if !matches!(u.scheme(), "http" | "https") {
            return Err("the webhook URL must be http:// or https://".into());
        }
        let port = u.port_or_known_default().unwrap_or(0);
        match u.host() {
            None => Err("the webhook URL has no host".into()),
            Some(url::Host::Ipv4(ip)) => self.allows(IpAddr::V4(ip), Some(port)),
            Some(url::Host::Ipv6(ip)) => self.allows(IpAddr::V6(ip), Some(port)),
            Some(url::Host::Domain(name)) => {
                let name = name.trim_end_matches('.').to_ascii_lowercase();
                let loopback = name == "localhost" || name.ends_with(".localhost");
                if (loopback || name == self.machine) && port == self.own.port() {
                    Err(OWN.into())
                } else if loopback && !self.allow_private {
                    Err(PRIVATE.into())
                } else {
                    Ok(())
                }
            }
        }
        .map(|()| u)
    }

    /// Whether a POST may go to `ip` (at `port`, when known).
    fn allows(&self, ip: IpAddr, port: Option<u16>) -> Result<(), String> {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        let this_machine = ip.is_loopback() || ip.is_unspecified() || ip == self.own.ip();
        if this_machine && port == Some(self.own.port()) {
            return Err(OWN.into());
        }
        match reach(ip) {
            Reach::Public => Ok(()),
            Reach::Private if self.allow_private => Ok(()),
            Reach::Private => Err(PRIVATE.into()),
            Reach::Never => Err(format!("the webhook's address {ip} is not one to POST to")),
        }
    }
}

const OWN: &str = "the webhook URL names this server itself";
const PRIVATE: &str = "the webhook URL names a loopback, private or link-local address, which this server does not call (its operator can allow them: [serve] push_allow_private = true)";

enum Reach {
    Public,
    /// Loopback, private, link-local, shared (CGNAT), unique local.
    Private,
    /// Unspecified, multicast, broadcast, reserved: never a webhook.
    Never,
}

fn reach(ip: IpAddr) -> Reach {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            if v4.is_unspecified() || v4.is_multicast() || v4.is_broadcast() || a == 0 || a >= 240 {
                Reach::Never
            } else if v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || (a == 100 && (64..128).contains(&b))
            {
                Reach::Private
            } else {
                Reach::Public
            }
        }
        IpAddr::V6(v6) => {
            if v6.is_unspecified() || v6.is_multicast() {
                Reach::Never
            } else if v6.is_loopback() || v6.is_unique_local() || v6.is_unicast_link_local() {
                Reach::Private
            } else {
                Reach::Public
            }
        }
    }
}

/// Resolves a webhook's host and keeps only the addresses the policy allows: the connection is
/// made to what was screened, never to a second answer of the DNS.
struct Screened(Arc<Policy>);

impl reqwest::dns::Resolve for Screened {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.0.clone();
        Box::pin(async move {
            let host = name.as_str().to_string();
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = (found.iter())
                .filter(|a| policy.allows(a.ip(), None).is_ok())
                .copied()
                .collect();
            if allowed.is_empty() {
                let why = match found.first() {
                    Some(a) => policy.allows(a.ip(), None).err().unwrap_or_default(),
                    None => format!("{host} has no address"),
                };
                return Err(why.into());
            }
            let addrs: reqwest::dns::Addrs = Box::new(allowed.into_iter());
            Ok(addrs)
        })
    }
}

/// A client's config as stored: checked (its ids plain, its URL allowed, its secrets fit for a
/// header), for `task_id` (the one the request names; empty for a send's, [`for_task`] later).
pub fn config_of(
    w: Wire,
    c: a2a_mod_proto::push::Config,
    task_id: &str,
    policy: &Policy,
    now_ms: i64,
) -> Result<PushConfig, A2aError> {
    let bad = |why: &str| A2aError::new(wire::INVALID_PARAMS, format!("Invalid params: {why}"));
    let id = wire::checked_id(&c.id, "the push notification config's id")?.unwrap_or_default();
    let url = c
        .url
        .ok_or_else(|| bad("the push notification config needs a url"))?;
    policy.check(&url).map_err(|why| bad(&why))?;
    for (what, v) in [
        ("token", &c.token),
        ("authentication.scheme", &c.scheme),
        ("authentication.credentials", &c.credentials),
    ] {
        if let Some(v) = v
            && (v.len() > MAX_SECRET || !v.bytes().all(|b| (0x20..0x7f).contains(&b)))
        {
            return Err(bad(&format!(
                "the push notification config's {what} must be at most {MAX_SECRET} printable ASCII characters"
            )));
        }
    }
    if c.scheme.as_deref().is_some_and(|s| s.contains(' ')) {
        return Err(bad("authentication.scheme is one word (Bearer, Basic…)"));
    }
    Ok(for_task(
        PushConfig {
            task_id: String::new(),
            id,
            dialect: match w.dialect {
                wire::Dialect::V1 => V1,
                wire::Dialect::V03 => V03,
            }
            .to_string(),
            url,
            token: c.token,
            scheme: c.scheme,
            credentials: c.credentials,
            created_ms: now_ms,
        },
        task_id,
    ))
}

/// A config for task `task_id` (a send's learns its task once it has one), named after the task
/// when its client gave it no id, as the SDKs name one.
pub fn for_task(c: PushConfig, task_id: &str) -> PushConfig {
    let id = if c.id.is_empty() {
        task_id.to_string()
    } else {
        c.id
    };
    PushConfig {
        task_id: task_id.to_string(),
        id,
        ..c
    }
}

/// A stored config as `w` answers it (its secrets left out).
pub fn answer(w: Wire, c: &PushConfig) -> serde_json::Value {
    a2a_mod_proto::push::answer(w, &view(c))
}

pub fn view(c: &PushConfig) -> a2a_mod_proto::push::Answer<'_> {
    a2a_mod_proto::push::Answer {
        task_id: &c.task_id,
        id: &c.id,
        url: &c.url,
        scheme: c.scheme.as_deref(),
    }
}

/// The POSTs a webhook of `dialect` gets for change `ev` of `t`, whose answer it has been told
/// up to byte `told`.
pub fn bodies(dialect: &str, t: &Task, ev: &Event, told: usize) -> Vec<String> {
    if dialect == V03 {
        return vec![wire::task(Wire::V03_RPC, t, None).to_string()];
    }
    let w = Wire::V1_REST;
    let mut out = Vec::new();
    if let Some(more) = t.answer.get(told..).filter(|m| !m.is_empty()) {
        let chunk = Event {
            update: Update::Chunk {
                text: more.to_string(),
                append: told > 0,
            },
            ..ev.clone()
        };
        out.push(wire::update(w, t, &chunk).to_string());
    }
    out.push(wire::update(w, t, ev).to_string());
    out
}

/// The HTTP client every POST goes through: no proxy, no redirect, [`TIMEOUT`], and names
/// resolved through [`Screened`]. `Err` says why there is none (the POSTs then fail with it).
pub fn client(policy: &Policy) -> Result<reqwest::Client, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .user_agent(concat!("a2a-mod/", env!("CARGO_PKG_VERSION")))
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(5))
        .timeout(TIMEOUT)
        .dns_resolver(Arc::new(Screened(Arc::new(policy.clone()))))
        .build()
        .map_err(|e| format!("no HTTP client for webhooks: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(allow_private: bool) -> Policy {
        Policy::new("127.0.0.1:8080".parse().unwrap(), "box", allow_private)
    }

    #[test]
    fn webhooks_that_point_inside_are_refused() {
        let p = policy(false);
        for ok in [
            "https://hooks.example.com/a2a?t=1",
            "http://93.184.215.14:9000/x",
            "http://[2606:4700::1]/x",
        ] {
            assert!(p.check(ok).is_ok(), "{ok}");
        }
        for (bad, why) in [
            ("http://127.0.0.1:9000/x", "push_allow_private"),
            ("http://localhost:9000/x", "push_allow_private"),
            ("http://app.localhost/x", "push_allow_private"),
            ("http://10.1.2.3/x", "push_allow_private"),
            ("http://192.168.1.20/x", "push_allow_private"),
            ("http://172.20.0.1/x", "push_allow_private"),
            (
                "http://169.254.169.254/latest/meta-data",
                "push_allow_private",
            ),
            ("http://100.64.0.1/x", "push_allow_private"),
            ("http://[::1]/x", "push_allow_private"),
            ("http://[fe80::1]/x", "push_allow_private"),
            ("http://[fd00::1]/x", "push_allow_private"),
            ("http://[::ffff:10.0.0.1]/x", "push_allow_private"),
            ("http://0.0.0.0/x", "not one to POST to"),
            ("http://224.0.0.1/x", "not one to POST to"),
            ("http://127.0.0.1:8080/", "this server itself"),
            ("http://box:8080/", "this server itself"),
            ("ftp://hooks.example.com/x", "http:// or https://"),
            ("not a url", "not a URL"),
        ] {
            let e = p.check(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        let open = policy(true);
        assert!(open.check("http://127.0.0.1:9000/x").is_ok());
        assert!(open.check("http://localhost:9000/x").is_ok());
        assert!(open.check("http://169.254.169.254/x").is_ok());
        // serve's own port stays refused, by any of its names.
        for own in [
            "http://127.0.0.1:8080/",
            "http://localhost:8080/",
            "http://[::1]:8080/",
            "http://box:8080/",
        ] {
            assert!(open.check(own).unwrap_err().contains("itself"), "{own}");
        }
        assert!(open.check("http://0.0.0.0:9000/").is_err());
    }

    #[tokio::test]
    async fn a_name_is_screened_when_it_is_resolved() {
        use reqwest::dns::Resolve as _;
        let closed = Screened(Arc::new(policy(false)));
        let e = closed
            .resolve("localhost".parse().unwrap())
            .await
            .err()
            .unwrap();
        assert!(e.to_string().contains("push_allow_private"), "{e}");
        let open = Screened(Arc::new(policy(true)));
        let addrs: Vec<SocketAddr> = open
            .resolve("localhost".parse().unwrap())
            .await
            .unwrap()
            .collect();
        assert!(addrs.iter().all(|a| a.ip().is_loopback()) && !addrs.is_empty());
    }

    #[test]
    fn a_webhook_is_told_the_answer_once_then_the_change() {
        let mut t = Task::new("t1", "c1", "build", 1_000);
        t.answer = "Hello, world".into();
        t.state = a2a_mod_core::task::TaskState::Completed;
        let ev = Event {
            update: Update::Status,
            state: t.state,
            status_text: None,
            at_ms: 2_000,
        };
        let v1 = bodies(V1, &t, &ev, 7);
        let parsed: Vec<serde_json::Value> = v1
            .iter()
            .map(|b| serde_json::from_str(b).unwrap())
            .collect();
        assert_eq!(parsed.len(), 2);
        let chunk = &parsed[0]["artifactUpdate"];
        assert_eq!(
            (&chunk["artifact"]["parts"][0]["text"], &chunk["append"]),
            (&serde_json::json!("world"), &serde_json::json!(true))
        );
        let status = &parsed[1]["statusUpdate"];
        assert_eq!(status["status"]["state"], "TASK_STATE_COMPLETED");
        // StreamResponse as the spec writes it: no v0.3 `final` or `kind`.
        assert!(status.get("final").is_none() && status.get("kind").is_none());
        assert_eq!(
            bodies(V1, &t, &ev, 12).len(),
            1,
            "nothing new of the answer"
        );
        let v03: serde_json::Value = serde_json::from_str(&bodies(V03, &t, &ev, 7)[0]).unwrap();
        assert_eq!(
            (v03["kind"].as_str(), v03["id"].as_str()),
            (Some("task"), Some("t1"))
        );
    }
}
