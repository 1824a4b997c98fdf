//! Agent card signatures (A2A v1 §8.4): each entry of the card's `signatures` is a JWS whose
//! payload is the RFC 8785 (JCS) canonical form of the card without `signatures`, detached (the
//! signing input is `protected.BASE64URL(canonical card)`).
//!
//! The SDKs do not agree on the canonical bytes yet: a2a-js signs the card as served, a2a-python
//! (1.x) signs the card as its protobuf type sees it (fields it does not know dropped, a `false`
//! of a field without presence dropped, then every `""`, `[]`, `{}` and `null` removed). A card
//! a2a-python serves also carries v0.3 fields it merges in after signing. So a signature is
//! checked against both forms, and holds if either matches: which form is not a question of
//! trust, the key is.
//!
//! Keys come from the user (`card_keys`: PEM public keys, JWKs or JWK sets), else from the
//! signature's `jku` when that is on the card's own origin over https (or loopback, for an agent
//! on this machine): a key from anywhere else would prove only that someone signed. The verdict
//! never blocks a worker unless `require_signed_card` is set.

use super::card::{Card, shown};
use super::http::{Budget, Resend, Size, fetch};
use crate::error::A2aError;
use a2a_mod_core::text::one_line;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use ring::signature as sig;
use serde_json::{Map, Value};
use std::fmt;
use std::path::Path;

/// What `worker show` says of a card's signatures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A signature holds under a key the user pinned or the card's origin serves.
    Verified { kid: Option<String> },
    /// The card carries no signature.
    None,
    /// A key was found and no signature holds under it: the card is not what was signed.
    Invalid(String),
    /// No signature could be checked (no key for it, an algorithm not supported).
    Unverifiable(String),
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Verified { kid: Some(k) } => write!(f, "verified (kid {k})"),
            Verdict::Verified { kid: None } => write!(f, "verified"),
            Verdict::None => write!(f, "none"),
            Verdict::Invalid(why) => write!(f, "invalid: {why}"),
            Verdict::Unverifiable(why) => write!(f, "unverifiable: {why}"),
        }
    }
}

/// Base64url as JOSE writes it (unpadded), also read with the padding some writers add.
pub(crate) fn unb64url(s: &str) -> Option<Vec<u8>> {
    B64.decode(s.trim_end_matches('=')).ok()
}

/// A public key a signature may be checked with.
#[derive(Debug, Clone)]
pub struct CardKey {
    kid: Option<String>,
    key: Public,
}

#[derive(Debug, Clone)]
enum Public {
    /// PKCS#1 `RSAPublicKey` DER, as SPKI carries it.
    RsaDer(Vec<u8>),
    /// A JWK's modulus and exponent.
    RsaParts {
        n: Vec<u8>,
        e: Vec<u8>,
    },
    /// An uncompressed point on P-256 or P-384.
    P256(Vec<u8>),
    P384(Vec<u8>),
    Ed25519(Vec<u8>),
}

impl Public {
    fn kind(&self) -> &'static str {
        match self {
            Public::RsaDer(_) | Public::RsaParts { .. } => "RSA",
            Public::P256(_) => "P-256",
            Public::P384(_) => "P-384",
            Public::Ed25519(_) => "Ed25519",
        }
    }
}

/// Key files are a few KiB; a JWK set of a few keys too.
const KEY_MAX: u64 = 64 * 1024;

/// The keys in a file the user gave (`--card-key`): a PEM public key (`BEGIN PUBLIC KEY`, SPKI),
/// a JWK, or a JWK set. The error says what the file is not, one line.
pub fn load_card_keys(path: &Path) -> Result<Vec<CardKey>, String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(KEY_MAX).read_to_end(&mut bytes))
        .map_err(|e| format!("cannot read \"{}\": {e}", path.display()))?;
    let text = String::from_utf8_lossy(&bytes);
    if text.contains("-----BEGIN") {
        use rustls::pki_types::SubjectPublicKeyInfoDer;
        use rustls::pki_types::pem::PemObject;
        let der = SubjectPublicKeyInfoDer::from_pem_slice(&bytes).map_err(|_| {
            format!(
                "{} is PEM but holds no public key (BEGIN PUBLIC KEY): give the public key, \
                 not a certificate or a private key",
                path.display()
            )
        })?;
        let key = from_spki(&der).map_err(|why| format!("\"{}\": {why}", path.display()))?;
        return Ok(vec![CardKey { kid: None, key }]);
    }
    let v: Value = serde_json::from_str(&text).map_err(|_| {
        format!(
            "\"{}\" is neither a PEM public key nor a JWK",
            path.display()
        )
    })?;
    let keys = jwks(&v).map_err(|why| format!("\"{}\": {why}", path.display()))?;
    if keys.is_empty() {
        return Err(format!("\"{}\" holds no usable public key", path.display()));
    }
    Ok(keys)
}

/// An X.509 SubjectPublicKeyInfo: RSA, EC on P-256 or P-384, or Ed25519.
fn from_spki(der: &[u8]) -> Result<Public, String> {
    use spki::der::Decode;
    const RSA: &str = "1.2.840.113549.1.1.1";
    const EC: &str = "1.2.840.10045.2.1";
    const P256: &str = "1.2.840.10045.3.1.7";
    const P384: &str = "1.3.132.0.34";
    const ED25519: &str = "1.3.101.112";
    let info = spki::SubjectPublicKeyInfoRef::from_der(der)
        .map_err(|_| "not a DER SubjectPublicKeyInfo".to_string())?;
    let bits = info
        .subject_public_key
        .as_bytes()
        .ok_or("the key's bit string is not whole bytes")?
        .to_vec();
    let alg = info.algorithm.oid.to_string();
    let curve = info.algorithm.parameters_oid().ok().map(|o| o.to_string());
    match (alg.as_str(), curve.as_deref()) {
        (RSA, _) => Ok(Public::RsaDer(bits)),
        (EC, Some(P256)) => Ok(Public::P256(bits)),
        (EC, Some(P384)) => Ok(Public::P384(bits)),
        (ED25519, _) => Ok(Public::Ed25519(bits)),
        _ => Err(format!(
            "a public key of a kind not supported (algorithm {alg}): give an RSA, P-256, P-384 or Ed25519 key"
        )),
    }
}

/// The keys of a JWK or a JWK set; keys of other kinds, or meant for encryption, are skipped.
fn jwks(v: &Value) -> Result<Vec<CardKey>, String> {
    let list = match v.get("keys") {
        Some(Value::Array(a)) => a.iter().collect(),
        Some(_) => return Err("\"keys\" is not a list".into()),
        None => vec![v],
    };
    Ok(list.into_iter().filter_map(jwk).collect())
}

fn jwk(v: &Value) -> Option<CardKey> {
    let s = |k: &str| v.get(k).and_then(Value::as_str);
    let b = |k: &str| s(k).and_then(unb64url);
    if s("use").is_some_and(|u| u != "sig") {
        return None;
    }
    let key = match (s("kty")?, s("crv")) {
        ("RSA", _) => Public::RsaParts {
            n: b("n")?,
            e: b("e")?,
        },
        ("EC", Some(c @ ("P-256" | "P-384"))) => {
            let mut point = vec![4];
            point.extend(b("x")?);
            point.extend(b("y")?);
            if c == "P-256" {
                Public::P256(point)
            } else {
                Public::P384(point)
            }
        }
        ("OKP", Some("Ed25519")) => Public::Ed25519(b("x")?),
        _ => return None,
    };
    Some(CardKey {
        kid: s("kid").map(String::from),
        key,
    })
}

/// The verdict on `card`'s signatures, with the user's `pinned` keys (when there are any, the
/// only ones used) or else the keys of each signature's `jku`.
pub(crate) async fn verify(
    card: &Card,
    pinned: &[CardKey],
    http: &reqwest::Client,
    budget: &Budget,
) -> Verdict {
    let sigs = &card.doc.signatures;
    if sigs.is_empty() {
        return Verdict::None;
    }
    let forms = forms(&card.raw);
    let mut invalid: Option<String> = None;
    let mut unverifiable: Option<String> = None;
    for (i, s) in sigs.iter().enumerate() {
        let at = if sigs.len() > 1 {
            format!("signature {} of {}: ", i + 1, sigs.len())
        } else {
            String::new()
        };
        match check_one(s, &forms, card, pinned, http, budget).await {
            Ok(kid) => return Verdict::Verified { kid },
            Err(Failed::Invalid(why)) => {
                invalid.get_or_insert(format!("{at}{why}"));
            }
            Err(Failed::Unverifiable(why)) => {
                unverifiable.get_or_insert(format!("{at}{why}"));
            }
        }
    }
    match (invalid, unverifiable) {
        (Some(why), _) => Verdict::Invalid(why),
        (None, Some(why)) => Verdict::Unverifiable(why),
        (None, None) => Verdict::None,
    }
}

enum Failed {
    Invalid(String),
    Unverifiable(String),
}

/// The ways a signature's payload may have been canonicalized ([module docs](self)), each as
/// `BASE64URL(JCS(form))`; the same form once.
fn forms(raw: &Value) -> Vec<String> {
    let card = unsigned(raw);
    let mut sdk = project(&card, CARD);
    clean_empty(&mut sdk);
    let mut out: Vec<String> = Vec::new();
    for v in [card, sdk] {
        if let Ok(bytes) = serde_json_canonicalizer::to_vec(&v) {
            let b = B64.encode(bytes);
            if !out.contains(&b) {
                out.push(b);
            }
        }
    }
    out
}

/// The card as signed: everything but its top-level `signatures` (§8.4.1).
fn unsigned(raw: &Value) -> Value {
    let mut card = raw.clone();
    if let Some(o) = card.as_object_mut() {
        o.remove("signatures");
    }
    card
}

/// A JWS protected header, the part of it a2a-mod needs (a field of another type than a
/// string reads as absent).
#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct Jose {
    alg: Value,
    kid: Value,
    jku: Value,
}

async fn check_one(
    s: &a2a_mod_proto::card::Signature,
    forms: &[String],
    card: &Card,
    pinned: &[CardKey],
    http: &reqwest::Client,
    budget: &Budget,
) -> Result<Option<String>, Failed> {
    let protected = (s.protected.as_deref())
        .ok_or_else(|| Failed::Invalid("it has no protected header".into()))?;
    let signature = (s.signature.as_deref())
        .and_then(unb64url)
        .ok_or_else(|| Failed::Invalid("its signature is not base64url".into()))?;
    let header: Jose = unb64url(protected)
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .filter(Value::is_object)
        .and_then(|v| serde_json::from_value(v).ok())
        .ok_or_else(|| Failed::Invalid("its protected header is not base64url JSON".into()))?;
    // A kid may also sit in the unprotected header; it only picks the key, the key proves.
    let kid = (header.kid.as_str())
        .or(s.kid.as_deref())
        .map(|k| one_line(k, 80));
    let alg = header.alg.as_str().unwrap_or("");
    let Some(algo) = Algo::of(alg) else {
        return Err(Failed::Unverifiable(format!(
            "its algorithm {:?} is not one a2a-mod checks (RS*, PS*, ES256, ES384, EdDSA)",
            one_line(alg, 20)
        )));
    };
    let fetched;
    let keys: Vec<&CardKey> = if !pinned.is_empty() {
        pinned.iter().collect()
    } else {
        let jku = header.jku.as_str().ok_or_else(|| {
            Failed::Unverifiable(
                "no key: pin the worker's key with --card-key (the signature names no jku)".into(),
            )
        })?;
        fetched = jku_keys(jku, card, http, budget).await?;
        fetched.iter().collect()
    };
    // Keys named like the signature's kid, else (a kid-less key, a kid-less signature) any.
    let named: Vec<&CardKey> = keys
        .iter()
        .copied()
        .filter(|k| kid.is_none() || k.kid.is_none() || k.kid == kid)
        .filter(|k| algo.fits(&k.key))
        .collect();
    if named.is_empty() {
        let which = kid.as_deref().map(|k| format!(" {k}")).unwrap_or_default();
        return Err(Failed::Unverifiable(format!(
            "no {} key{which} among {} key(s) {}",
            algo.key_kind(),
            keys.len(),
            if pinned.is_empty() {
                "its jku serves"
            } else {
                "pinned with --card-key"
            }
        )));
    }
    for form in forms {
        let input = format!("{protected}.{form}");
        if named
            .iter()
            .any(|k| algo.verify(&k.key, input.as_bytes(), &signature))
        {
            return Ok(kid);
        }
    }
    Err(Failed::Invalid(format!(
        "the {alg} signature{} does not match the card",
        kid.as_deref()
            .map(|k| format!(" (kid {k})"))
            .unwrap_or_default()
    )))
}

/// The keys a `jku` serves, when it is on the card's own origin over https (or loopback).
async fn jku_keys(
    jku: &str,
    card: &Card,
    http: &reqwest::Client,
    budget: &Budget,
) -> Result<Vec<CardKey>, Failed> {
    let url = card.url.join(jku).ok();
    let loopback = |u: &url::Url| match u.host() {
        Some(url::Host::Ipv4(a)) => a.is_loopback(),
        Some(url::Host::Ipv6(a)) => a.is_loopback(),
        Some(url::Host::Domain(d)) => d == "localhost",
        None => false,
    };
    let Some(url) =
        url.filter(|u| u.origin() == card.url.origin() && (u.scheme() == "https" || loopback(u)))
    else {
        return Err(Failed::Unverifiable(format!(
            "its jku {} is not on the card's own https origin: pin the worker's key with --card-key",
            url::Url::parse(jku)
                .map(|u| shown(u.as_str()))
                .unwrap_or_else(|_| one_line(jku, 80))
        )));
    };
    let cant = |why: String| Failed::Unverifiable(format!("its jku {} {why}", shown(url.as_str())));
    let req = http
        .get(url.as_str())
        .header(reqwest::header::ACCEPT, "application/json");
    let ans = fetch(req, budget, Resend::IfDropped, Size::Whole)
        .await
        .map_err(|e: A2aError| cant(format!("cannot be read: {e}")))?;
    if !ans.ok() {
        return Err(cant(format!("answered HTTP {}", ans.status)));
    }
    let v = ans.json().ok_or_else(|| cant("is not JSON".into()))?;
    jwks(&v).map_err(|why| cant(format!("is not a JWK set ({why})")))
}

/// A JWS algorithm a2a-mod checks, and the ring verifier for it.
#[derive(Clone, Copy)]
enum Algo {
    Rsa(&'static sig::RsaParameters),
    P256,
    P384,
    Ed25519,
}

impl Algo {
    fn of(alg: &str) -> Option<Algo> {
        Some(match alg {
            "RS256" => Algo::Rsa(&sig::RSA_PKCS1_2048_8192_SHA256),
            "RS384" => Algo::Rsa(&sig::RSA_PKCS1_2048_8192_SHA384),
            "RS512" => Algo::Rsa(&sig::RSA_PKCS1_2048_8192_SHA512),
            "PS256" => Algo::Rsa(&sig::RSA_PSS_2048_8192_SHA256),
            "PS384" => Algo::Rsa(&sig::RSA_PSS_2048_8192_SHA384),
            "PS512" => Algo::Rsa(&sig::RSA_PSS_2048_8192_SHA512),
            "ES256" => Algo::P256,
            "ES384" => Algo::P384,
            "EdDSA" | "Ed25519" => Algo::Ed25519,
            _ => return None,
        })
    }

    fn key_kind(self) -> &'static str {
        match self {
            Algo::Rsa(_) => "RSA",
            Algo::P256 => "P-256",
            Algo::P384 => "P-384",
            Algo::Ed25519 => "Ed25519",
        }
    }

    fn fits(self, key: &Public) -> bool {
        self.key_kind() == key.kind()
    }

    fn verify(self, key: &Public, msg: &[u8], signature: &[u8]) -> bool {
        let unparsed = |alg: &'static dyn sig::VerificationAlgorithm, k: &[u8]| {
            sig::UnparsedPublicKey::new(alg, k.to_vec())
                .verify(msg, signature)
                .is_ok()
        };
        match (self, key) {
            (Algo::Rsa(p), Public::RsaDer(der)) => unparsed(p, der),
            (Algo::Rsa(p), Public::RsaParts { n, e }) => sig::RsaPublicKeyComponents { n, e }
                .verify(p, msg, signature)
                .is_ok(),
            (Algo::P256, Public::P256(pt)) => unparsed(&sig::ECDSA_P256_SHA256_FIXED, pt),
            (Algo::P384, Public::P384(pt)) => unparsed(&sig::ECDSA_P384_SHA384_FIXED, pt),
            (Algo::Ed25519, Public::Ed25519(k)) => unparsed(&sig::ED25519, k),
            _ => false,
        }
    }
}

/// How a field of the card's protobuf type (a2a.proto v1) turns into JSON, for the SDK form.
enum Shape {
    /// Kept as it is: a string, a number, a list of them, a `Struct`, a bool with presence.
    Leaf,
    /// A bool without presence: protobuf's JSON leaves out a `false`.
    Bool,
    Msg(&'static [(&'static str, Shape)]),
    /// A list of messages.
    Each(&'static [(&'static str, Shape)]),
    /// A map of string to message.
    Map(&'static [(&'static str, Shape)]),
}

use Shape::{Bool, Each, Leaf, Map as MapOf, Msg};

const REQUIREMENT: &[(&str, Shape)] = &[("schemes", MapOf(&[("list", Leaf)]))];
const FLOW: &[(&str, Shape)] = &[
    ("authorizationUrl", Leaf),
    ("deviceAuthorizationUrl", Leaf),
    ("tokenUrl", Leaf),
    ("refreshUrl", Leaf),
    ("scopes", Leaf),
    ("pkceRequired", Bool),
];
const SCHEME: &[(&str, Shape)] = &[
    (
        "apiKeySecurityScheme",
        Msg(&[("description", Leaf), ("location", Leaf), ("name", Leaf)]),
    ),
    (
        "httpAuthSecurityScheme",
        Msg(&[
            ("description", Leaf),
            ("scheme", Leaf),
            ("bearerFormat", Leaf),
        ]),
    ),
    (
        "oauth2SecurityScheme",
        Msg(&[
            ("description", Leaf),
            (
                "flows",
                Msg(&[
                    ("authorizationCode", Msg(FLOW)),
                    ("clientCredentials", Msg(FLOW)),
                    ("implicit", Msg(FLOW)),
                    ("password", Msg(FLOW)),
                    ("deviceCode", Msg(FLOW)),
                ]),
            ),
            ("oauth2MetadataUrl", Leaf),
        ]),
    ),
    (
        "openIdConnectSecurityScheme",
        Msg(&[("description", Leaf), ("openIdConnectUrl", Leaf)]),
    ),
    ("mtlsSecurityScheme", Msg(&[("description", Leaf)])),
];
const CARD: &[(&str, Shape)] = &[
    ("name", Leaf),
    ("description", Leaf),
    (
        "supportedInterfaces",
        Each(&[
            ("url", Leaf),
            ("protocolBinding", Leaf),
            ("tenant", Leaf),
            ("protocolVersion", Leaf),
        ]),
    ),
    ("provider", Msg(&[("url", Leaf), ("organization", Leaf)])),
    ("version", Leaf),
    ("documentationUrl", Leaf),
    (
        "capabilities",
        Msg(&[
            ("streaming", Leaf),
            ("pushNotifications", Leaf),
            (
                "extensions",
                Each(&[
                    ("uri", Leaf),
                    ("description", Leaf),
                    ("required", Bool),
                    ("params", Leaf),
                ]),
            ),
            ("extendedAgentCard", Leaf),
        ]),
    ),
    ("securitySchemes", MapOf(SCHEME)),
    ("securityRequirements", Each(REQUIREMENT)),
    ("defaultInputModes", Leaf),
    ("defaultOutputModes", Leaf),
    (
        "skills",
        Each(&[
            ("id", Leaf),
            ("name", Leaf),
            ("description", Leaf),
            ("tags", Leaf),
            ("examples", Leaf),
            ("inputModes", Leaf),
            ("outputModes", Leaf),
            ("securityRequirements", Each(REQUIREMENT)),
        ]),
    ),
    ("iconUrl", Leaf),
];

/// `v` as the message `fields` describes keeps it: the fields it knows, a bool without presence
/// only when true.
fn project(v: &Value, fields: &[(&str, Shape)]) -> Value {
    let Some(o) = v.as_object() else {
        return v.clone();
    };
    let mut out = Map::new();
    for (name, shape) in fields {
        let Some(x) = o.get(*name) else { continue };
        let kept = match shape {
            Leaf => x.clone(),
            Bool if x == &Value::Bool(false) => continue,
            Bool => x.clone(),
            Msg(f) => project(x, f),
            Each(f) => match x {
                Value::Array(a) => Value::Array(a.iter().map(|e| project(e, f)).collect()),
                other => other.clone(),
            },
            MapOf(f) => match x {
                Value::Object(m) => {
                    Value::Object(m.iter().map(|(k, e)| (k.clone(), project(e, f))).collect())
                }
                other => other.clone(),
            },
        };
        out.insert((*name).to_string(), kept);
    }
    Value::Object(out)
}

/// Removes, depth first, every `""`, `[]`, `{}` and `null` (a container emptied by it too).
/// Returns whether `v` itself is now empty.
fn clean_empty(v: &mut Value) -> bool {
    match v {
        Value::Object(o) => {
            o.retain(|_, x| !clean_empty(x));
            o.is_empty()
        }
        Value::Array(a) => {
            a.retain_mut(|x| !clean_empty(x));
            a.is_empty()
        }
        Value::String(s) => s.is_empty(),
        Value::Null => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_sdk_form_keeps_what_the_proto_type_knows_and_drops_empties() {
        let card = json!({
            "name": "A", "description": "", "url": "http://x/", "protocolVersion": "0.3.0",
            "capabilities": {"streaming": false, "stateTransitionHistory": false,
                "extensions": [{"uri": "u", "required": false, "params": {"k": [], "n": 1}}]},
            "securitySchemes": {"b": {"httpAuthSecurityScheme": {"scheme": "Bearer"},
                "type": "http", "scheme": "bearer"}},
            "skills": [{"id": "s", "name": "S", "tags": [], "security": [{"b": []}]}],
            "signatures": [{"protected": "x", "signature": "y"}]
        });
        let mut sdk = project(&card, CARD);
        clean_empty(&mut sdk);
        assert_eq!(
            sdk,
            json!({"name": "A", "capabilities": {"streaming": false,
                "extensions": [{"uri": "u", "params": {"n": 1}}]},
                "securitySchemes": {"b": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}},
                "skills": [{"id": "s", "name": "S"}]})
        );
    }

    /// The A2A TCK's RFC 8785 vectors (tests/fixtures/jcs/README.md), through the bytes a
    /// literal card's signature covers: each accepted input gives exactly the published bytes;
    /// each rejected one fails to parse or to canonicalize, or (the `signatures` group) is not
    /// what gets signed.
    #[test]
    fn the_tck_jcs_vectors_canonicalize_as_published() {
        let root =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/jcs");
        let manifest: Value =
            serde_json::from_str(&std::fs::read_to_string(root.join("MANIFEST.json")).unwrap())
                .unwrap();
        let files = manifest["vectors"]
            .as_array()
            .expect("MANIFEST.json lists vectors");
        let mut seen = (0, 0);
        for f in files {
            let rel = f["path"].as_str().expect("a vector's path");
            let text = std::fs::read_to_string(root.join(rel)).unwrap();
            let sum = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
            let sum: String = sum.as_ref().iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(
                Some(sum.as_str()),
                f["sha256"].as_str(),
                "{rel}: not the published file"
            );
            let v: Value = serde_json::from_str(&text).unwrap();
            let signed = |input: &Value| serde_json_canonicalizer::to_vec(&unsigned(input));
            match v["disposition"].as_str() {
                Some("MUST-ACCEPT") => {
                    let want = v["expected"]["canonical_utf8_hex"].as_str().unwrap();
                    let got = signed(&v["input"]).unwrap_or_else(|e| panic!("{rel}: {e}"));
                    let got: String = got.iter().map(|b| format!("{b:02x}")).collect();
                    assert_eq!(got, want, "{rel}");
                    seen.0 += 1;
                }
                Some("MUST-REJECT") => {
                    let raw = v["input_raw"].as_str().unwrap();
                    // Refused by the parser or the canonicalizer, or (the `signatures` group)
                    // canonicalized without what must not be signed.
                    if let Ok(input) = serde_json::from_str::<Value>(raw)
                        && let Ok(bytes) = signed(&input)
                    {
                        assert!(
                            input.get("signatures").is_some()
                                && !String::from_utf8_lossy(&bytes).contains("\"signatures\""),
                            "{rel}: accepted"
                        );
                    }
                    seen.1 += 1;
                }
                other => panic!("{rel}: disposition {other:?}"),
            }
        }
        assert_eq!(seen, (47, 10), "the vectors MANIFEST.json lists");
    }

    #[test]
    fn verdicts_read_as_worker_show_prints_them() {
        assert_eq!(
            Verdict::Verified {
                kid: Some("k1".into())
            }
            .to_string(),
            "verified (kid k1)"
        );
        assert_eq!(Verdict::None.to_string(), "none");
        assert_eq!(Verdict::Invalid("x".into()).to_string(), "invalid: x");
        assert_eq!(
            Verdict::Unverifiable("y".into()).to_string(),
            "unverifiable: y"
        );
    }
}
