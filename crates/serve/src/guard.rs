//! The browser guard every request passes first, before anything is read or run: serve runs
//! code with the user's rights, and loopback is no wall (any web page can POST to 127.0.0.1,
//! and a DNS-rebinding page can read the answer). Called by [`crate::http`] on every route, the
//! card and `/healthz` included. Pure: it decides from the request's head and the connection.
//!
//! - `Host` must be one of serve's own names, or a name `[serve] allowed_hosts` lists: a
//!   rebinding page's requests carry its own domain.
//! - A request from a web page carries `Origin` (or `Sec-Fetch-Site` naming another site): it is
//!   refused unless `[serve] allowed_origins` lists that origin. A2A clients send neither.
//! - A POST must declare a JSON body: the forms a page can send without a CORS preflight
//!   (`text/plain`, form-urlencoded, multipart, none) are refused with 415.
//!
//! serve adds no CORS headers, so a page's own requests get nothing a browser would let it read.

use axum::http::{HeaderMap, Method, StatusCode, header};
use std::net::{IpAddr, SocketAddr};

/// What serve answers to as its own names, and what the operator allowed besides.
#[derive(Debug, Clone, Default)]
pub struct Guard {
    /// Host names, lowercase, without a port.
    names: Vec<String>,
    /// Bound to every address: whatever address a client reached is one of ours.
    wildcard: bool,
    /// Origins, lowercase, without a trailing `/`.
    origins: Vec<String>,
}

/// A refused request: its status, the rule (for the log), and what the client is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: StatusCode,
    pub rule: &'static str,
    pub message: String,
}

/// The host part of a `Host` value (`name`, `name:port`, `[v6]:port`), lowercase.
fn host_part(host: &str) -> String {
    let host = host.trim();
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split_once(']')
            .map_or(host, |(v6, _)| &host[..v6.len() + 2])
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
            _ => host,
        }
    };
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// An address as a `Host` names it: `127.0.0.1`, `[::1]`.
fn ip_name(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

impl Guard {
    /// The guard of a server bound to `bound`, the machine named `machine`, with the operator's
    /// extra hosts and origins.
    pub fn new(bound: SocketAddr, machine: &str, hosts: &[String], origins: &[String]) -> Guard {
        let ip = bound.ip();
        let mut names: Vec<String> = hosts.iter().map(|h| host_part(h)).collect();
        if ip.is_loopback() || ip.is_unspecified() {
            names.extend(["localhost", "127.0.0.1", "[::1]"].map(String::from));
        }
        if ip.is_unspecified() {
            names.push(machine.to_ascii_lowercase());
        } else {
            names.push(ip_name(ip));
        }
        Guard {
            names,
            wildcard: ip.is_unspecified(),
            origins: origins
                .iter()
                .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
                .collect(),
        }
    }

    /// Whether the request may go on; `local` is the address the client reached.
    pub fn check(
        &self,
        method: &Method,
        headers: &HeaderMap,
        local: Option<SocketAddr>,
    ) -> Result<(), Refusal> {
        self.check_host(headers, local)?;
        self.check_origin(headers)?;
        if method == Method::POST {
            check_json(headers)?;
        }
        Ok(())
    }

    fn check_host(&self, headers: &HeaderMap, local: Option<SocketAddr>) -> Result<(), Refusal> {
        let Some(host) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else {
            return Err(Refusal {
                status: StatusCode::BAD_REQUEST,
                rule: "no Host",
                message: "the request names no Host — send the Host header".into(),
            });
        };
        let name = host_part(host);
        let reached = self.wildcard && local.is_some_and(|l| ip_name(l.ip()) == name);
        if reached || self.names.contains(&name) {
            return Ok(());
        }
        Err(Refusal {
            status: StatusCode::FORBIDDEN,
            rule: "foreign Host",
            message: format!(
                "Host {:?} is not one of this server's names — use its address, or have its operator add the name to serve.allowed_hosts",
                a2a_mod_core::text::one_line(host, 80)
            ),
        })
    }

    fn check_origin(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let get = |k: &str| headers.get(k).and_then(|v| v.to_str().ok()).map(str::trim);
        let origin = headers.get(header::ORIGIN).map(|v| {
            v.to_str()
                .unwrap_or("?")
                .trim()
                .trim_end_matches('/')
                .to_ascii_lowercase()
        });
        let cross = matches!(get("sec-fetch-site"), Some("cross-site" | "same-site"));
        match origin {
            Some(o) if self.origins.contains(&o) => Ok(()),
            Some(o) => Err(Refusal {
                status: StatusCode::FORBIDDEN,
                rule: "web page (Origin)",
                message: format!(
                    "requests from web pages are refused (Origin {:?}) — A2A clients send no Origin; to allow this page, its operator adds it to serve.allowed_origins",
                    a2a_mod_core::text::one_line(&o, 80)
                ),
            }),
            None if cross => Err(Refusal {
                status: StatusCode::FORBIDDEN,
                rule: "web page (Sec-Fetch-Site)",
                message: "requests from other sites' web pages are refused — A2A clients send no Sec-Fetch-Site".into(),
            }),
            None => Ok(()),
        }
    }
}

/// A POST's body must be declared JSON: `application/json`, or any `+json` type
/// (`application/a2a+json`).
fn check_json(headers: &HeaderMap) -> Result<(), Refusal> {
    let declared = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let essence = declared
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
    {
        return Ok(());
    }
    Err(Refusal {
        status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
        rule: "body not declared JSON",
        message: format!(
            "the body must be declared JSON (Content-Type: application/json), not {:?}",
            a2a_mod_core::text::one_line(declared, 80)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    fn rule(g: &Guard, m: Method, pairs: &[(&str, &str)], local: &str) -> Option<&'static str> {
        g.check(&m, &headers(pairs), Some(local.parse().unwrap()))
            .err()
            .map(|r| r.rule)
    }

    const JSON: (&str, &str) = ("content-type", "application/json");

    #[test]
    fn a_loopback_server_answers_to_its_own_names_only() {
        let g = Guard::new("127.0.0.1:8462".parse().unwrap(), "box", &[], &[]);
        let at = "127.0.0.1:8462";
        for host in [
            "127.0.0.1:8462",
            "localhost:8462",
            "LOCALHOST",
            "[::1]:8462",
            "localhost.",
        ] {
            assert_eq!(
                rule(&g, Method::POST, &[("host", host), JSON], at),
                None,
                "{host}"
            );
        }
        for host in [
            "evil.example:8462",
            "box:8462",
            "127.0.0.1.evil.example",
            "10.0.0.2:8462",
        ] {
            assert_eq!(
                rule(&g, Method::GET, &[("host", host)], at),
                Some("foreign Host"),
                "{host}"
            );
        }
        assert_eq!(rule(&g, Method::GET, &[], at), Some("no Host"));
        let proxied = Guard::new(
            "127.0.0.1:8462".parse().unwrap(),
            "box",
            &["a2a.example.com".into()],
            &[],
        );
        assert_eq!(
            rule(&proxied, Method::GET, &[("host", "A2A.example.com")], at),
            None
        );
    }

    #[test]
    fn a_wildcard_server_answers_to_the_machine_and_the_address_reached() {
        let g = Guard::new("0.0.0.0:8462".parse().unwrap(), "Build-Box", &[], &[]);
        let at = "192.0.2.7:8462";
        for host in ["build-box:8462", "192.0.2.7:8462", "localhost:8462"] {
            assert_eq!(rule(&g, Method::GET, &[("host", host)], at), None, "{host}");
        }
        assert_eq!(
            rule(&g, Method::GET, &[("host", "192.0.2.8:8462")], at),
            Some("foreign Host")
        );
    }

    #[test]
    fn web_pages_are_refused_unless_their_origin_is_allowed() {
        let g = Guard::new(
            "127.0.0.1:1".parse().unwrap(),
            "box",
            &[],
            &["https://app.example.com/".into()],
        );
        let at = "127.0.0.1:1";
        let host = ("host", "127.0.0.1:1");
        for origin in [
            "http://evil.example",
            "null",
            "https://app.example.com.evil",
        ] {
            assert_eq!(
                rule(&g, Method::POST, &[host, JSON, ("origin", origin)], at),
                Some("web page (Origin)"),
                "{origin}"
            );
        }
        assert_eq!(
            rule(
                &g,
                Method::POST,
                &[host, JSON, ("origin", "https://APP.example.com")],
                at
            ),
            None
        );
        assert_eq!(
            rule(
                &g,
                Method::GET,
                &[host, ("sec-fetch-site", "cross-site")],
                at
            ),
            Some("web page (Sec-Fetch-Site)")
        );
        assert_eq!(
            rule(&g, Method::GET, &[host, ("sec-fetch-site", "none")], at),
            None
        );
        assert_eq!(
            rule(
                &g,
                Method::OPTIONS,
                &[host, ("origin", "http://evil.example")],
                at
            ),
            Some("web page (Origin)")
        );
    }

    #[test]
    fn a_post_must_declare_json() {
        let g = Guard::new("127.0.0.1:1".parse().unwrap(), "box", &[], &[]);
        let host = ("host", "127.0.0.1:1");
        for ok in [
            "application/json",
            "application/json; charset=utf-8",
            "application/a2a+json",
        ] {
            assert_eq!(
                rule(
                    &g,
                    Method::POST,
                    &[host, ("content-type", ok)],
                    "127.0.0.1:1"
                ),
                None,
                "{ok}"
            );
        }
        for bad in [
            "text/plain",
            "text/plain;charset=UTF-8",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "text/json+json",
        ] {
            assert_eq!(
                rule(
                    &g,
                    Method::POST,
                    &[host, ("content-type", bad)],
                    "127.0.0.1:1"
                ),
                Some("body not declared JSON"),
                "{bad}"
            );
        }
        assert_eq!(
            rule(&g, Method::POST, &[host], "127.0.0.1:1"),
            Some("body not declared JSON")
        );
        assert_eq!(rule(&g, Method::GET, &[host], "127.0.0.1:1"), None);
    }
}
