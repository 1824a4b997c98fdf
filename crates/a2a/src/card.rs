//! Agent cards: where to look for one, which endpoint and dialect to use (docs/a2a.md "Versions":
//! the hybrid-card rule), and what the card says about auth. The card is read by
//! `a2a_mod_proto::card` (typed and lenient: v1, v0.3 and the merged hybrid documents all read,
//! and a worker's unexpected field never makes discovery fail); what is chosen and shown is here.

use crate::error::A2aError;
use crate::view::{CardSummary, SkillSummary};
use a2a_mod_config::WorkerConfig;
use a2a_mod_core::text::one_line;
use reqwest::Url;
use serde_json::Value;

use a2a_mod_proto::card::{Card as Doc, Scheme};
pub(crate) use a2a_mod_proto::{Binding, Dialect};

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Endpoint {
    pub dialect: Dialect,
    pub binding: Binding,
    pub url: String,
    pub tenant: Option<String>,
}

impl Endpoint {
    /// The same interface spoken in `dialect`.
    fn with_dialect(&self, dialect: Dialect) -> Endpoint {
        Endpoint {
            dialect,
            ..self.clone()
        }
    }

    pub fn describe(&self) -> String {
        let v = match self.dialect {
            Dialect::V1 => "1.0",
            Dialect::V03 => "0.3",
        };
        let b = match self.binding {
            Binding::JsonRpc => "JSONRPC",
            Binding::Rest => "HTTP+JSON",
        };
        format!("{v} {b} {}", self.url)
    }
}

/// A parsed card: the endpoint to use, the v0.3 endpoint to fall back to when a v1 call meets a
/// v0.3-only server, what it says (`doc`), and the document as sent (its signatures cover it).
#[derive(Debug, Clone)]
pub(crate) struct Card {
    pub raw: Value,
    pub doc: Doc,
    pub url: Url,
    pub primary: Endpoint,
    pub fallback: Option<Endpoint>,
}

/// A URL's origin: scheme, host and port, the default port filled in. Two URLs with equal
/// origins may be sent the same credentials; nothing else is compared (not the path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Origin {
    scheme: String,
    host: String,
    port: u16,
}

impl Origin {
    pub fn of(u: &Url) -> Option<Origin> {
        Some(Origin {
            scheme: u.scheme().to_ascii_lowercase(),
            host: u.host_str()?.to_ascii_lowercase(),
            port: u.port_or_known_default()?,
        })
    }

    pub fn parse(s: &str) -> Option<Origin> {
        Url::parse(s.trim()).ok().as_ref().and_then(Origin::of)
    }
}

impl std::fmt::Display for Origin {
    /// `scheme://host[:port]`, the port only when it is not the scheme's default (what a user
    /// types after `--allow-origin`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let default = match self.scheme.as_str() {
            "http" => Some(80),
            "https" => Some(443),
            _ => None,
        };
        write!(f, "{}://{}", self.scheme, self.host)?;
        if default != Some(self.port) {
            write!(f, ":{}", self.port)?;
        }
        Ok(())
    }
}

/// The origins a worker's requests and credentials may go to: its configured URL's, and those
/// the user allowed at `worker add --allow-origin`.
pub(crate) fn trusted(cfg: &WorkerConfig) -> Vec<Origin> {
    std::iter::once(cfg.url.as_str())
        .chain(cfg.allow_origins.iter().map(String::as_str))
        .filter_map(Origin::parse)
        .collect()
}

pub(crate) fn is_trusted(trusted: &[Origin], url: &str) -> bool {
    Origin::parse(url).is_some_and(|o| trusted.contains(&o))
}

/// A URL as it may appear in a message: no userinfo, query or fragment (a redirect's query may
/// carry a login state or a token).
pub(crate) fn shown(url: &str) -> String {
    match Url::parse(url) {
        Ok(mut u) => {
            u.set_query(None);
            u.set_fragment(None);
            a2a_mod_config::without_userinfo(&u)
        }
        Err(_) => "a URL that does not parse".into(),
    }
}

/// A place outside the trusted origins, as the error shows it: what goes there, and the origin to
/// pass to `--allow-origin` (the URL itself when it has none).
pub(crate) struct Untrusted {
    pub what: String,
    pub origin: String,
}

impl Untrusted {
    /// `what` names the act ("the card sends requests to"); `full` shows the whole URL, not just
    /// its origin.
    pub(crate) fn new(what: &str, url: &str, full: bool) -> Untrusted {
        let origin = Origin::parse(url).map(|o| o.to_string());
        let place = match &origin {
            Some(o) if !full => o.clone(),
            _ => shown(url),
        };
        Untrusted {
            what: format!("{what} {place}"),
            origin: origin.unwrap_or_else(|| shown(url)),
        }
    }
}

impl From<Untrusted> for A2aError {
    fn from(u: Untrusted) -> A2aError {
        A2aError::Untrusted {
            what: u.what,
            origin: u.origin,
        }
    }
}

/// Where to look for the card of a configured worker URL, in order.
pub(crate) fn candidates(url: &str) -> Result<Vec<String>, CardError> {
    let u = Url::parse(url).map_err(|cause| CardError::BadWorkerUrl {
        url: url.to_string(),
        cause,
    })?;
    if u.path().ends_with(".json") {
        return Ok(vec![url.to_string()]);
    }
    let origin = u.origin().ascii_serialization();
    let path = u.path().trim_end_matches('/');
    let mut out = vec![
        format!("{origin}{path}/.well-known/agent-card.json"),
        format!("{origin}{path}/.well-known/agent.json"),
    ];
    if !path.is_empty() {
        out.push(format!("{origin}/.well-known/agent-card.json"));
        out.push(format!("{origin}/.well-known/agent.json"));
    }
    Ok(out)
}

/// True when a JSON document is plausibly an agent card (and so its faults are reported as the
/// card's, instead of trying the next location).
pub(crate) use a2a_mod_proto::card::looks_like_card;

fn binding_of(s: &str) -> Option<Binding> {
    match s.trim().to_ascii_uppercase().as_str() {
        "JSONRPC" | "JSON-RPC" => Some(Binding::JsonRpc),
        "HTTP+JSON" | "REST" | "HTTP" => Some(Binding::Rest),
        _ => None,
    }
}

/// Why no card can be looked for, or a fetched one cannot be used; the client reports it as a
/// protocol error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CardError {
    #[error("{url:?} is not a url ({cause})")]
    BadWorkerUrl { url: String, cause: url::ParseError },
    #[error("bad card url {url:?} ({cause})")]
    BadUrl { url: String, cause: url::ParseError },
    #[error("agent card at {card_url} names no JSON-RPC or HTTP+JSON endpoint")]
    NoEndpoint { card_url: String },
}

/// A v1 card's endpoints (`supportedInterfaces`), each URL resolved against the card's.
fn v1_endpoints(doc: &Doc, resolve: &dyn Fn(&str) -> Option<String>) -> Vec<Endpoint> {
    let mut v1_list = Vec::new();
    for i in &doc.supported_interfaces {
        let (Some(u), Some(b)) = (
            i.url.as_deref().and_then(resolve),
            i.binding.as_deref().and_then(binding_of),
        ) else {
            continue;
        };
        // supportedInterfaces is a v1 field: an entry without a version is v1.
        let dialect = match i.protocol_version.as_deref().map(str::trim) {
            Some(v) if v.starts_with("0.") => Dialect::V03,
            _ => Dialect::V1,
        };
        v1_list.push(Endpoint {
            dialect,
            binding: b,
            url: u,
            tenant: i.tenant.clone().filter(|t| !t.is_empty()),
        });
    }
    v1_list
}

/// A v0.3 card's endpoints: `url` with `preferredTransport`, then `additionalInterfaces`.
fn v03_endpoints(doc: &Doc, resolve: &dyn Fn(&str) -> Option<String>) -> Vec<Endpoint> {
    let mut legacy = Vec::new();
    if let Some(u) = doc.url.as_deref().and_then(resolve) {
        let b = (doc.preferred_transport.as_deref())
            .map(binding_of)
            .unwrap_or(Some(Binding::JsonRpc));
        if let Some(b) = b {
            legacy.push(Endpoint {
                dialect: Dialect::V03,
                binding: b,
                url: u,
                tenant: None,
            });
        }
    }
    for i in &doc.additional_interfaces {
        if let (Some(u), Some(b)) = (
            i.url.as_deref().and_then(resolve),
            i.binding.as_deref().and_then(binding_of),
        ) {
            legacy.push(Endpoint {
                dialect: Dialect::V03,
                binding: b,
                url: u,
                tenant: None,
            });
        }
    }
    legacy
}

impl Card {
    /// `forced` is `WorkerConfig.protocol`; with it there is no fallback.
    pub fn parse(raw: Value, card_url: &str, forced: Option<Dialect>) -> Result<Card, CardError> {
        let url = Url::parse(card_url).map_err(|cause| CardError::BadUrl {
            url: card_url.to_string(),
            cause,
        })?;
        // A card's userinfo would be sent as Basic auth beside ours and printed with the
        // endpoint: it is dropped.
        let resolve = |s: &str| {
            url.join(s.trim()).ok().map(|mut u| {
                let _ = u.set_password(None);
                let _ = u.set_username("");
                u.to_string()
            })
        };

        let doc = Doc::read(&raw).unwrap_or_default();
        // Hybrid rule: supportedInterfaces first; the v0.3 fields still serve as 0.3 endpoints.
        let mut all = v1_endpoints(&doc, &resolve);
        all.extend(v03_endpoints(&doc, &resolve));
        let find = |d: Dialect, b: Binding| all.iter().find(|i| i.dialect == d && i.binding == b);
        let any = |b: Binding| all.iter().find(|i| i.binding == b);

        let (primary, fallback) = match forced {
            Some(d) => {
                let pick = find(d, Binding::JsonRpc)
                    .or_else(|| find(d, Binding::Rest))
                    .or_else(|| any(Binding::JsonRpc))
                    .or_else(|| any(Binding::Rest));
                (pick.map(|i| i.with_dialect(d)), None)
            }
            None => {
                let pick = find(Dialect::V1, Binding::JsonRpc)
                    .or_else(|| find(Dialect::V03, Binding::JsonRpc))
                    .or_else(|| find(Dialect::V1, Binding::Rest))
                    .or_else(|| find(Dialect::V03, Binding::Rest));
                let primary = pick.cloned();
                let fallback = pick.filter(|i| i.dialect == Dialect::V1).map(|p| {
                    find(Dialect::V03, p.binding)
                        .cloned()
                        .unwrap_or_else(|| p.with_dialect(Dialect::V03))
                });
                (primary, fallback)
            }
        };
        let primary = primary.ok_or_else(|| CardError::NoEndpoint {
            card_url: card_url.to_string(),
        })?;
        Ok(Card {
            raw,
            doc,
            url,
            primary,
            fallback,
        })
    }

    /// The first place this card would make us send requests or credentials to that `cfg` does
    /// not trust: an endpoint we would use, or the OAuth token URL when the user did not give one.
    /// `(what, origin)` for the message.
    pub fn untrusted(&self, cfg: &WorkerConfig) -> Option<Untrusted> {
        let trusted = trusted(cfg);
        let endpoints = std::iter::once(&self.primary).chain(self.fallback.as_ref());
        for ep in endpoints {
            if !is_trusted(&trusted, &ep.url) {
                return Some(Untrusted::new("the card sends requests to", &ep.url, false));
            }
        }
        if cfg.oauth.as_ref().is_some_and(|o| o.token_url.is_none())
            && let Some(u) = self.token_url()
            && !is_trusted(&trusted, &u)
        {
            return Some(Untrusted::new(
                "the card sends the oauth client secret to",
                &u,
                true,
            ));
        }
        None
    }

    /// Whether the card offers an extended card to clients with credentials.
    pub fn offers_extended(&self) -> bool {
        self.doc.offers_extended()
    }

    pub fn summary(&self, endpoint: &Endpoint) -> CardSummary {
        use a2a_mod_core::bounds;
        let doc = &self.doc;
        /// A skill's media types (Claude sees what a worker takes), else the card's
        /// defaults; at most 10, each one clean line, since the worker wrote them.
        fn modes(skill: Option<&Vec<String>>, card: &[String]) -> Vec<String> {
            let list = skill.map_or(card, Vec::as_slice);
            list.iter().take(10).map(|m| one_line(m, 80)).collect()
        }
        let text =
            |s: &Option<String>, cols| s.as_deref().map(|s| one_line(s, cols)).unwrap_or_default();
        let mut skills: Vec<SkillSummary> = (doc.skills.iter())
            .take(bounds::CARD_SKILLS)
            .map(|s| SkillSummary {
                id: text(&s.id, bounds::CARD_SKILL_COLS),
                name: text(&s.name, bounds::CARD_SKILL_COLS),
                description: text(&s.description, bounds::CARD_SKILL_COLS),
                input_modes: modes(s.input_modes.as_ref(), &doc.default_input_modes),
                output_modes: modes(s.output_modes.as_ref(), &doc.default_output_modes),
            })
            .collect();
        // A card may list thousands: the rest are counted, so nothing is dropped silently.
        let more = doc.skills.len().saturating_sub(bounds::CARD_SKILLS);
        if more > 0 {
            skills.push(SkillSummary {
                id: String::new(),
                name: format!("… and {more} more skills"),
                description: String::new(),
                input_modes: Vec::new(),
                output_modes: Vec::new(),
            });
        }
        let mut auth: Vec<String> = Vec::new();
        for s in self.schemes() {
            let line = describe(&s);
            if !auth.contains(&line) {
                auth.push(line);
            }
        }
        // What `--extension` would name: each URI the card offers, marked when it is required.
        let extensions = (doc.capabilities.extensions.iter())
            .map(|e| {
                let uri = one_line(&e.uri, bounds::CARD_SKILL_COLS);
                if e.required {
                    format!("{uri} (required)")
                } else {
                    uri
                }
            })
            .take(bounds::CARD_SKILLS)
            .collect();
        CardSummary {
            name: text(&doc.name, bounds::CARD_NAME_COLS),
            description: text(&doc.description, bounds::CARD_DESCRIPTION_COLS),
            skills,
            protocol: endpoint.describe(),
            auth,
            extensions,
        }
    }

    /// The card's security schemes, each string one clean line (the worker wrote them) and the
    /// token URL resolved against the card's.
    fn schemes(&self) -> Vec<Scheme> {
        let line = |s: &str, cols| one_line(s, cols);
        (self.doc.security_schemes.iter())
            .map(|s| match s {
                Scheme::Http(h) => Scheme::Http(line(h, 300)),
                Scheme::ApiKey { location, name } => Scheme::ApiKey {
                    location: line(location, 40),
                    name: line(name, 300),
                },
                Scheme::OAuth2 {
                    client_credentials,
                    flows,
                } => Scheme::OAuth2 {
                    client_credentials: (client_credentials.as_deref())
                        .and_then(|u| self.url.join(u.trim()).ok())
                        .map(|u| u.to_string()),
                    flows: flows.clone(),
                },
                Scheme::OpenIdConnect(u) => Scheme::OpenIdConnect(line(u, 300)),
                s => s.clone(),
            })
            .collect()
    }

    /// The client-credentials token URL the card publishes, if any.
    pub fn token_url(&self) -> Option<String> {
        self.schemes().into_iter().find_map(|s| match s {
            Scheme::OAuth2 {
                client_credentials, ..
            } => client_credentials,
            _ => None,
        })
    }

    /// The header an apiKey scheme in the card names, if any.
    pub fn api_key_header(&self) -> Option<String> {
        self.schemes().into_iter().find_map(|s| match s {
            Scheme::ApiKey { location, name } if location.eq_ignore_ascii_case("header") => {
                Some(name)
            }
            _ => None,
        })
    }
}

/// A scheme as `workers` lists it.
fn describe(s: &Scheme) -> String {
    match s {
        Scheme::Http(s) if s.eq_ignore_ascii_case("bearer") => "bearer".into(),
        Scheme::Http(s) => format!("http {}", s.to_ascii_lowercase()),
        Scheme::ApiKey { location, name } => format!("apiKey {location} {name}"),
        Scheme::OAuth2 {
            client_credentials: Some(u),
            ..
        } => format!("oauth2 client credentials {u}"),
        Scheme::OAuth2 { flows, .. } if flows.is_empty() => "oauth2".into(),
        Scheme::OAuth2 { flows, .. } => format!("oauth2 {}", one_line(&flows.join(", "), 80)),
        Scheme::OpenIdConnect(u) => format!("openIdConnect {u}"),
        Scheme::MutualTls => "mutualTLS".into(),
        Scheme::Unknown => "unknown scheme".into(),
    }
}

#[cfg(test)]
mod origin_tests {
    use super::*;

    /// Scheme, host and port, default ports filled in; nothing else counts.
    #[test]
    fn origins_compare_scheme_host_and_port() {
        let o = |s: &str| Origin::parse(s).unwrap();
        assert_eq!(o("http://h"), o("http://H:80/some/path?q=1"));
        assert_eq!(o("https://h/a"), o("https://h:443/b"));
        assert_ne!(o("http://h"), o("https://h"));
        assert_ne!(o("http://h:8080"), o("http://h"));
        assert_ne!(o("http://127.0.0.1:1"), o("http://localhost:1"));
        assert_eq!(o("https://h:443").to_string(), "https://h");
        assert_eq!(o("http://h:8443/x").to_string(), "http://h:8443");
        let cfg = WorkerConfig {
            url: "http://a:1".into(),
            allow_origins: vec!["https://b".into()],
            ..Default::default()
        };
        let t = trusted(&cfg);
        assert!(is_trusted(&t, "http://a:1/rpc") && is_trusted(&t, "https://b:443/x"));
        assert!(!is_trusted(&t, "http://a:2/") && !is_trusted(&t, "http://b/"));
        assert!(!is_trusted(&t, "not a url"));
    }

    #[test]
    fn shown_urls_lose_userinfo_and_query() {
        assert_eq!(
            shown("http://u:pw@h:1/login?state=secret#f"),
            "http://***@h:1/login"
        );
        let c = Card::parse(
            serde_json::json!({"url": "http://u:pw@h:1/rpc"}),
            "http://h:1/.well-known/agent-card.json",
            None,
        )
        .unwrap();
        assert_eq!(c.primary.url, "http://h:1/rpc");
    }
}
