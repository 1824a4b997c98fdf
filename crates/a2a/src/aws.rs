//! AWS Signature Version 4 for `aws_sigv4` workers (Bedrock AgentCore and anything behind IAM):
//! every request is signed as it leaves, by the official signer (`aws-sigv4`). The keys are read
//! at each use, from `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`/`AWS_SESSION_TOKEN`, else from
//! the profile `AWS_PROFILE` (or `default`) of the shared files, so a rotated key is picked up
//! without a restart and nothing is kept.

use crate::error::A2aError;
use a2a_mod_config::AwsSigV4Config;
use a2a_mod_os::secret::Secret;
use aws_credential_types::Credentials;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use std::path::PathBuf;
use std::time::SystemTime;

/// The service signed for when the user names none: Bedrock AgentCore's runtime.
pub const AWS_DEFAULT_SERVICE: &str = "bedrock-agentcore";

/// One request's keys and where they came from (the source is named when the worker refuses
/// the signature; the keys never are).
struct Keys {
    access_key_id: Secret,
    secret: Secret,
    session_token: Option<Secret>,
    source: String,
    /// The profile's `region`, the last place a region is looked for.
    profile_region: Option<String>,
}

/// What signs one worker's requests: the keys, the region and the service.
pub(crate) struct Signer {
    keys: Keys,
    region: String,
    service: String,
}

impl Signer {
    /// The signer for a request to `url`, with keys read now.
    pub fn new(cfg: &AwsSigV4Config, url: &str) -> Result<Signer, A2aError> {
        let keys = keys()?;
        let region = cfg
            .region
            .clone()
            .or_else(|| env("AWS_REGION"))
            .or_else(|| env("AWS_DEFAULT_REGION"))
            .or_else(|| host_region(url))
            .or_else(|| keys.profile_region.clone())
            .ok_or_else(|| {
                A2aError::Credentials(
                    "no AWS region to sign for: pass --aws-region to `a2a-mod worker add`, or set AWS_REGION".into(),
                )
            })?;
        let service = cfg
            .service
            .clone()
            .unwrap_or_else(|| AWS_DEFAULT_SERVICE.into());
        Ok(Signer {
            keys,
            region,
            service,
        })
    }

    pub fn source(&self) -> String {
        format!(
            "AWS SigV4 for {} in {} with {}",
            self.service, self.region, self.keys.source
        )
    }

    /// `req` with its signature headers (`Authorization`, `X-Amz-Date`, and
    /// `X-Amz-Security-Token` for temporary keys), signed over its method, URL, headers and body.
    pub fn sign(&self, mut req: reqwest::Request) -> Result<reqwest::Request, A2aError> {
        let body: &[u8] = match req.body() {
            None => &[],
            Some(b) => b.as_bytes().ok_or_else(|| {
                A2aError::Credentials("a streamed request body cannot be signed".into())
            })?,
        };
        let headers: Vec<(&str, &str)> = req
            .headers()
            .iter()
            .filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?)))
            .collect();
        let identity = Credentials::new(
            self.keys.access_key_id.expose(),
            self.keys.secret.expose(),
            self.keys
                .session_token
                .as_ref()
                .map(|t| t.expose().to_string()),
            None,
            "a2a-mod",
        )
        .into();
        let failed = |e: &dyn std::fmt::Display| {
            A2aError::Credentials(format!("cannot sign the request for AWS: {e}"))
        };
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name(&self.service)
            .time(SystemTime::now())
            .settings(SigningSettings::default())
            .build()
            .map_err(|e| failed(&e))?
            .into();
        let signable = SignableRequest::new(
            req.method().as_str(),
            req.url().as_str(),
            headers.into_iter(),
            SignableBody::Bytes(body),
        )
        .map_err(|e| failed(&e))?;
        let (instructions, _) = sign(signable, &params)
            .map_err(|e| failed(&e))?
            .into_parts();
        let (signed, _) = instructions.into_parts();
        for h in signed {
            let mut v =
                reqwest::header::HeaderValue::from_str(h.value()).map_err(|e| failed(&e))?;
            v.set_sensitive(h.sensitive() || h.name() == "authorization");
            req.headers_mut().insert(h.name(), v);
        }
        Ok(req)
    }
}

fn env(name: &str) -> Option<String> {
    a2a_mod_os::env::secret(name)
}

/// The keys from the environment, else from the profile's files.
fn keys() -> Result<Keys, A2aError> {
    match (env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY")) {
        (Some(id), Some(secret)) => {
            return Ok(Keys {
                access_key_id: Secret::new(id),
                secret: Secret::new(secret),
                session_token: env("AWS_SESSION_TOKEN").map(Secret::new),
                source: "the keys in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY".into(),
                profile_region: None,
            });
        }
        (Some(_), None) | (None, Some(_)) => {
            return Err(A2aError::Credentials(
                "only one of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY is set: set both, or neither to use AWS_PROFILE".into(),
            ));
        }
        (None, None) => {}
    }
    let name = env("AWS_PROFILE").unwrap_or_else(|| "default".into());
    let home = a2a_mod_os::env::home_dir();
    let file = |var: &str, leaf: &str| {
        a2a_mod_os::env::os_path(var).or_else(|| home.as_ref().map(|h| h.join(".aws").join(leaf)))
    };
    let creds = file("AWS_SHARED_CREDENTIALS_FILE", "credentials");
    let config = file("AWS_CONFIG_FILE", "config");
    // The credentials file names a profile `[name]`, the config file `[profile name]` (and
    // `[default]`); a key in the credentials file wins.
    let config_section = if name == "default" {
        name.clone()
    } else {
        format!("profile {name}")
    };
    let a = section(creds.as_ref(), &name)?;
    let b = section(config.as_ref(), &config_section)?;
    let get = |k: &str| {
        a.as_ref()
            .and_then(|s| s.get(k))
            .or_else(|| b.as_ref().and_then(|s| s.get(k)))
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let shown = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
    if let (Some(id), Some(secret)) = (get("aws_access_key_id"), get("aws_secret_access_key")) {
        let from = if a
            .as_ref()
            .is_some_and(|s| s.contains_key("aws_secret_access_key"))
        {
            shown(&creds)
        } else {
            shown(&config)
        };
        return Ok(Keys {
            access_key_id: Secret::new(id),
            secret: Secret::new(secret),
            session_token: get("aws_session_token").map(Secret::new),
            source: format!("profile {name:?} in {}", from.unwrap_or_default()),
            profile_region: get("region"),
        });
    }
    // Profiles that get keys by running something (SSO, a role, a process) need the AWS CLI.
    let indirect = [
        "sso_session",
        "sso_start_url",
        "credential_process",
        "role_arn",
    ]
    .into_iter()
    .find(|k| get(k).is_some());
    Err(A2aError::Credentials(match indirect {
        Some(k) => format!(
            "AWS profile {name:?} gets its keys through {k}, which a2a-mod does not run: export them first, \
             `eval \"$(aws configure export-credentials --profile {name} --format env)\"`"
        ),
        None if a.is_some() || b.is_some() => format!(
            "AWS profile {name:?} has no aws_access_key_id and aws_secret_access_key (in {})",
            shown(&creds).unwrap_or_default()
        ),
        None => "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE with a profile in ~/.aws/credentials".into(),
    }))
}

/// One section of an AWS shared file as keys and values; a missing file is no section.
fn section(
    path: Option<&PathBuf>,
    name: &str,
) -> Result<Option<std::collections::HashMap<String, String>>, A2aError> {
    let Some(path) = path else {
        return Ok(None);
    };
    // The files are INI as the AWS CLI reads them: no quoting or escapes (a secret may hold any
    // character but a newline).
    let opt = ini::ParseOption {
        enabled_quote: false,
        enabled_escape: false,
        ..Default::default()
    };
    match ini::Ini::load_from_file_opt(path, opt) {
        Ok(f) => Ok(f.section(Some(name)).map(|s| {
            s.iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), v.to_string()))
                .collect()
        })),
        Err(ini::Error::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        // The parser's message quotes no value, only where it stopped.
        Err(e) => Err(A2aError::Credentials(format!(
            "cannot read \"{}\": {e}",
            path.display()
        ))),
    }
}

/// The region in an AWS host name, `<service>.<region>.amazonaws.com` (and `.amazonaws.com.cn`).
fn host_region(url: &str) -> Option<String> {
    let u = url::Url::parse(url).ok()?;
    let host = u.host_str()?;
    let labels: Vec<&str> = host.split('.').collect();
    let at = labels.iter().position(|l| *l == "amazonaws")?;
    labels[..at]
        .iter()
        .rev()
        .find(|l| looks_like_region(l))
        .map(|l| l.to_string())
}

/// `us-east-1`, `eu-central-2`, `us-gov-west-1`, `cn-north-1`: letters, dashes, a final digit.
fn looks_like_region(label: &str) -> bool {
    let parts: Vec<&str> = label.split('-').collect();
    parts.len() >= 3
        && parts[..parts.len() - 1]
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase()))
        && parts[parts.len() - 1].bytes().all(|b| b.is_ascii_digit())
        && !parts[parts.len() - 1].is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_region_is_read_from_an_aws_host() {
        let r = |u: &str| host_region(u);
        assert_eq!(
            r("https://bedrock-agentcore.us-west-2.amazonaws.com/runtimes/x/invocations")
                .as_deref(),
            Some("us-west-2")
        );
        assert_eq!(
            r("https://a.b.cn-north-1.amazonaws.com.cn/").as_deref(),
            Some("cn-north-1")
        );
        assert_eq!(
            r("https://svc.us-gov-west-1.amazonaws.com/").as_deref(),
            Some("us-gov-west-1")
        );
        assert_eq!(r("https://agent.example.com/"), None);
        assert_eq!(r("http://127.0.0.1:9000/"), None);
    }
}
