//! What a client reads of an agent card, v1, v0.3 or the hybrid of both (docs/a2a.md
//! "Versions"): typed and lenient, as [`crate::read`] is, so a worker's unexpected field never
//! makes discovery fail. Which endpoint to use, and what to show, is the client's
//! (`crates/a2a/src/card.rs`).

use crate::lenient::{Flag, List, Obj, Present, Str, from_object};
use serde::Deserialize;
use serde_json::{Map, Value};

/// A card as read. Strings are as the worker wrote them: a reader cleans what it shows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Card {
    pub name: Option<String>,
    pub description: Option<String>,
    /// v0.3's endpoint, and its binding (`preferredTransport`).
    pub url: Option<String>,
    pub preferred_transport: Option<String>,
    /// v1's endpoints.
    pub supported_interfaces: Vec<Interface>,
    /// v0.3's other endpoints.
    pub additional_interfaces: Vec<Interface>,
    pub capabilities: Capabilities,
    /// v0.3's flag for an extended card.
    pub supports_authenticated_extended_card: bool,
    /// The skills that are objects, in order.
    pub skills: Vec<Skill>,
    pub default_input_modes: Vec<String>,
    pub default_output_modes: Vec<String>,
    /// `securitySchemes`, in the card's order.
    pub security_schemes: Vec<Scheme>,
    /// `signatures`: JWS signatures of the card (v1 §8.4; the objects, in order).
    pub signatures: Vec<Signature>,
}

/// One of a card's signatures: a JWS in flattened JSON form, its payload the card itself.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Signature {
    /// The protected header, base64url, as sent.
    pub protected: Option<String>,
    /// The signature, base64url, as sent.
    pub signature: Option<String>,
    /// The unprotected header's `kid`.
    pub kid: Option<String>,
}

/// One endpoint: v1's `protocolBinding` and `protocolVersion`, or v0.3's `transport`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Interface {
    pub url: Option<String>,
    /// `protocolBinding` (v1) or `transport` (v0.3).
    pub binding: Option<String>,
    pub protocol_version: Option<String>,
    pub tenant: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Capabilities {
    pub streaming: bool,
    pub push_notifications: bool,
    /// v1's flag for an extended card.
    pub extended_agent_card: bool,
    pub extensions: Vec<Extension>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Extension {
    pub uri: String,
    pub required: bool,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Skill {
    pub id: Option<String>,
    pub name: Option<String>,
    pub description: Option<String>,
    /// `None` when the skill names none (the card's defaults apply).
    pub input_modes: Option<Vec<String>>,
    pub output_modes: Option<Vec<String>>,
}

/// A security scheme, from either card dialect: v1 wraps each in a one-key object
/// (`httpAuthSecurityScheme`…), v0.3 is OpenAPI's, with `type`.
#[derive(Debug, Clone, PartialEq)]
pub enum Scheme {
    /// `scheme`: `bearer`, `basic`…
    Http(String),
    ApiKey {
        /// `location` (v1) or `in` (v0.3): `header`, `query`, `cookie`.
        location: String,
        name: String,
    },
    OAuth2 {
        /// The client-credentials flow's `tokenUrl`, as written.
        client_credentials: Option<String>,
        /// The flows' names.
        flows: Vec<String>,
    },
    OpenIdConnect(String),
    MutualTls,
    Unknown,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct WireCard<'a> {
    #[serde(borrow)]
    name: Str<'a>,
    #[serde(borrow)]
    description: Str<'a>,
    #[serde(borrow)]
    url: Str<'a>,
    #[serde(borrow)]
    preferred_transport: Str<'a>,
    #[serde(borrow)]
    supported_interfaces: List<Obj<WireInterface<'a>>>,
    #[serde(borrow)]
    additional_interfaces: List<Obj<WireInterface<'a>>>,
    #[serde(borrow)]
    capabilities: Obj<WireCapabilities<'a>>,
    supports_authenticated_extended_card: Flag,
    #[serde(borrow)]
    skills: List<Obj<WireSkill<'a>>>,
    #[serde(borrow)]
    default_input_modes: List<Str<'a>>,
    #[serde(borrow)]
    default_output_modes: List<Str<'a>>,
    security_schemes: Obj<Map<String, Value>>,
    #[serde(borrow)]
    signatures: List<Obj<WireSignature<'a>>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct WireSignature<'a> {
    #[serde(borrow)]
    protected: Str<'a>,
    #[serde(borrow)]
    signature: Str<'a>,
    #[serde(borrow)]
    header: Obj<Kid<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Kid<'a> {
    #[serde(borrow)]
    kid: Str<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct WireInterface<'a> {
    #[serde(borrow)]
    url: Str<'a>,
    #[serde(borrow)]
    protocol_binding: Str<'a>,
    #[serde(borrow)]
    transport: Str<'a>,
    #[serde(borrow)]
    protocol_version: Str<'a>,
    #[serde(borrow)]
    tenant: Str<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct WireCapabilities<'a> {
    streaming: Flag,
    push_notifications: Flag,
    extended_agent_card: Flag,
    #[serde(borrow)]
    extensions: List<Obj<WireExtension<'a>>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct WireExtension<'a> {
    #[serde(borrow)]
    uri: Str<'a>,
    required: Flag,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct WireSkill<'a> {
    #[serde(borrow)]
    id: Str<'a>,
    #[serde(borrow)]
    name: Str<'a>,
    #[serde(borrow)]
    description: Str<'a>,
    #[serde(borrow)]
    input_modes: List<Str<'a>>,
    #[serde(borrow)]
    output_modes: List<Str<'a>>,
}

/// The strings of a list, the rest skipped.
fn strings(l: List<Str<'_>>) -> Vec<String> {
    l.items.into_iter().filter_map(Str::take).collect()
}

impl Card {
    /// Reads a card; `None` for anything but an object.
    pub fn read(v: &Value) -> Option<Card> {
        let c: WireCard<'_> = from_object(v)?;
        let interfaces = |l: List<Obj<WireInterface<'_>>>| -> Vec<Interface> {
            (l.items.into_iter().filter_map(|i| i.0))
                .map(|i| Interface {
                    url: i.url.take(),
                    binding: i.protocol_binding.take().or_else(|| i.transport.take()),
                    protocol_version: i.protocol_version.take(),
                    tenant: i.tenant.take(),
                })
                .collect()
        };
        let caps = c.capabilities.0.unwrap_or_default();
        let modes = |l: List<Str<'_>>| l.present.then(|| strings(l));
        Some(Card {
            name: c.name.take(),
            description: c.description.take(),
            url: c.url.take(),
            preferred_transport: c.preferred_transport.take(),
            supported_interfaces: interfaces(c.supported_interfaces),
            additional_interfaces: interfaces(c.additional_interfaces),
            capabilities: Capabilities {
                streaming: caps.streaming.0,
                push_notifications: caps.push_notifications.0,
                extended_agent_card: caps.extended_agent_card.0,
                extensions: (caps.extensions.items.into_iter().filter_map(|e| e.0))
                    .filter_map(|e| {
                        Some(Extension {
                            uri: e.uri.take()?,
                            required: e.required.0,
                        })
                    })
                    .collect(),
            },
            supports_authenticated_extended_card: c.supports_authenticated_extended_card.0,
            skills: (c.skills.items.into_iter().filter_map(|s| s.0))
                .map(|s| Skill {
                    id: s.id.take(),
                    name: s.name.take(),
                    description: s.description.take(),
                    input_modes: modes(s.input_modes),
                    output_modes: modes(s.output_modes),
                })
                .collect(),
            default_input_modes: strings(c.default_input_modes),
            default_output_modes: strings(c.default_output_modes),
            security_schemes: (c.security_schemes.0.into_iter().flatten())
                .map(|(_, v)| Scheme::read(&v))
                .collect(),
            signatures: (c.signatures.items.into_iter().filter_map(|s| s.0))
                .map(|s| Signature {
                    protected: s.protected.take(),
                    signature: s.signature.take(),
                    kid: s.header.0.and_then(|h| h.kid.take()),
                })
                .collect(),
        })
    }

    /// Whether it offers an extended card to clients with credentials (v1's capability, or
    /// v0.3's flag).
    pub fn offers_extended(&self) -> bool {
        self.capabilities.extended_agent_card || self.supports_authenticated_extended_card
    }
}

/// What a card document looks like, to tell one from another JSON document.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Looks<'a> {
    supported_interfaces: Present,
    #[serde(borrow)]
    url: Str<'a>,
    #[serde(borrow)]
    name: Str<'a>,
}

/// True when a JSON document is plausibly an agent card: it has `supportedInterfaces`, or a
/// string `url` or `name`.
pub fn looks_like_card(v: &Value) -> bool {
    from_object::<Looks<'_>>(v).is_some_and(|l| {
        l.supported_interfaces.0 || l.url.get().is_some() || l.name.get().is_some()
    })
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct WireScheme<'a> {
    #[serde(borrow)]
    http_auth_security_scheme: Obj<SchemeFields<'a>>,
    #[serde(borrow)]
    api_key_security_scheme: Obj<SchemeFields<'a>>,
    #[serde(borrow)]
    oauth2_security_scheme: Obj<SchemeFields<'a>>,
    #[serde(borrow)]
    open_id_connect_security_scheme: Obj<SchemeFields<'a>>,
    #[serde(borrow)]
    mtls_security_scheme: Obj<SchemeFields<'a>>,
    #[serde(borrow, flatten)]
    fields: SchemeFields<'a>,
}

/// A scheme's own fields, in both dialects' names.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct SchemeFields<'a> {
    #[serde(borrow, rename = "type")]
    kind: Str<'a>,
    #[serde(borrow)]
    scheme: Str<'a>,
    #[serde(borrow)]
    location: Str<'a>,
    #[serde(borrow, rename = "in")]
    within: Str<'a>,
    #[serde(borrow)]
    name: Str<'a>,
    flows: Obj<Map<String, Value>>,
    #[serde(borrow)]
    open_id_connect_url: Str<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Flow<'a> {
    #[serde(borrow)]
    token_url: Str<'a>,
}

impl Scheme {
    /// Reads one scheme; what it cannot is [`Scheme::Unknown`].
    pub fn read(v: &Value) -> Scheme {
        let Some(w) = from_object::<WireScheme<'_>>(v) else {
            return Scheme::Unknown;
        };
        let (kind, f) = if let Some(f) = w.http_auth_security_scheme.0 {
            ("http".to_string(), f)
        } else if let Some(f) = w.api_key_security_scheme.0 {
            ("apikey".into(), f)
        } else if let Some(f) = w.oauth2_security_scheme.0 {
            ("oauth2".into(), f)
        } else if let Some(f) = w.open_id_connect_security_scheme.0 {
            ("openidconnect".into(), f)
        } else if let Some(f) = w.mtls_security_scheme.0 {
            ("mutualtls".into(), f)
        } else {
            let Some(kind) = w.fields.kind.get().map(str::to_ascii_lowercase) else {
                return Scheme::Unknown;
            };
            (kind, w.fields)
        };
        let text = |s: Str<'_>| s.take().unwrap_or_default();
        match kind.as_str() {
            "http" => Scheme::Http(text(f.scheme)),
            "apikey" => Scheme::ApiKey {
                location: f
                    .location
                    .take()
                    .or_else(|| f.within.take())
                    .unwrap_or_default(),
                name: text(f.name),
            },
            "oauth2" => {
                let flows = f.flows.0.unwrap_or_default();
                let client_credentials = (flows.get("clientCredentials"))
                    .and_then(from_object::<Flow<'_>>)
                    .and_then(|c| c.token_url.take());
                Scheme::OAuth2 {
                    client_credentials,
                    flows: flows.keys().cloned().collect(),
                }
            }
            "openidconnect" => Scheme::OpenIdConnect(text(f.open_id_connect_url)),
            "mutualtls" => Scheme::MutualTls,
            _ => Scheme::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_hybrid_card_reads_whole_and_a_sloppy_one_does_not_fail() {
        let c = Card::read(&json!({
            "name": "w", "url": "http://h/rpc", "preferredTransport": "JSONRPC",
            "supportedInterfaces": [{"url": "http://h/v1", "protocolBinding": "JSONRPC",
                "protocolVersion": "1.0", "tenant": "t"}, "junk"],
            "additionalInterfaces": [{"url": "http://h/rest", "transport": "HTTP+JSON"}],
            "capabilities": {"streaming": true, "extendedAgentCard": true,
                "extensions": [{"uri": "urn:x", "required": true}, {"required": true}]},
            "skills": [{"id": "s", "inputModes": ["text/plain"]}, 5],
            "defaultOutputModes": ["text/plain", 3],
            "securitySchemes": {
                "b": {"httpAuthSecurityScheme": {"scheme": "Bearer"}},
                "k": {"type": "apiKey", "in": "header", "name": "X-Key"},
                "o": {"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": "/token"}}},
                "m": {"mtlsSecurityScheme": {}},
                "z": {"type": "nope"}
            }
        }))
        .unwrap();
        assert_eq!(c.supported_interfaces.len(), 1);
        assert_eq!(c.supported_interfaces[0].tenant.as_deref(), Some("t"));
        assert_eq!(
            c.additional_interfaces[0].binding.as_deref(),
            Some("HTTP+JSON")
        );
        assert!(c.capabilities.streaming && c.offers_extended());
        assert_eq!(
            c.capabilities.extensions,
            [Extension {
                uri: "urn:x".into(),
                required: true
            }]
        );
        assert_eq!(c.skills.len(), 1);
        assert_eq!(c.skills[0].output_modes, None);
        assert_eq!(c.default_output_modes, ["text/plain"]);
        assert_eq!(
            c.security_schemes,
            [
                Scheme::Http("Bearer".into()),
                Scheme::ApiKey {
                    location: "header".into(),
                    name: "X-Key".into()
                },
                Scheme::OAuth2 {
                    client_credentials: Some("/token".into()),
                    flows: vec!["clientCredentials".into()]
                },
                Scheme::MutualTls,
                Scheme::Unknown,
            ]
        );
        let c = Card::read(&json!({"name": 5, "capabilities": "all", "skills": {},
            "securitySchemes": []}))
        .unwrap();
        assert_eq!(c, Card::default());
        assert!(looks_like_card(&json!({"name": "w"})));
        assert!(looks_like_card(&json!({"supportedInterfaces": null})));
        assert!(!looks_like_card(&json!({"name": 5, "url": []})));
        assert!(!looks_like_card(&json!(["name"])));
    }
}
