//! `worker add|remove|list|show` over `config.toml`.

use super::Run;
use super::shell::{load, out, out_json, runtime, user_command};
use crate::cli::{WorkerAddArgs, WorkerCmd};
use a2a_mod_a2a::{CardSummary, Worker};
// Card text is the worker's: no escapes or newlines reach the terminal.
use a2a_mod_app::session::worker_error;
use a2a_mod_config::{self as config, AwsSigV4Config, GoogleConfig, OAuthConfig, WorkerConfig};
use a2a_mod_os::env::{Ctx, now_ms};
use a2a_mod_store::{SessionPaths, Store, session};
use anyhow::{Result, anyhow};
use std::time::Duration;

/// How long `worker add` and `worker show` wait for a card.
const CARD_TIMEOUT: Duration = Duration::from_secs(10);

impl Run for WorkerCmd {
    fn run(self) -> Result<i32> {
        let ctx = &user_command()?;
        match self {
            WorkerCmd::Add(a) => add(ctx, *a),
            WorkerCmd::Remove { alias } => remove(ctx, &alias),
            WorkerCmd::List { json } => list(ctx, json),
            WorkerCmd::Show { alias, json } => show(ctx, &alias, json),
        }?;
        Ok(a2a_mod_claude::error::EXIT_OK)
    }
}

fn fetch_card(alias: &str, cfg: &WorkerConfig) -> Result<CardSummary> {
    let worker = Worker::new(alias, cfg.clone(), a2a_mod_a2a::http_client());
    runtime()?
        .block_on(worker.card(tokio::time::Instant::now() + CARD_TIMEOUT))
        .map_err(|e| worker_error(alias, &cfg.url, &e))
}

fn add(ctx: &Ctx, a: WorkerAddArgs) -> Result<()> {
    config::validate_alias(&a.alias).map_err(|e| anyhow!("{e} — pick another alias"))?;
    if url::Url::parse(&a.url).is_ok_and(|u| config::has_userinfo(&u)) {
        return Err(userinfo_refused("the worker URL", &a.url));
    }
    config::validate_url(&a.url)
        .map_err(|e| anyhow!("{e} — give the worker's base URL, e.g. https://agent.example.com"))?;
    let mut allow_origins: Vec<String> = Vec::new();
    for o in &a.allow_origin {
        let origin = allowed_origin(o)?;
        if !allow_origins.contains(&origin) {
            allow_origins.push(origin);
        }
    }
    let mut extensions: Vec<String> = Vec::new();
    for e in &a.extension {
        config::validate_extension(e).map_err(|e| anyhow!("--extension: {e}"))?;
        if !extensions.contains(e) {
            extensions.push(e.clone());
        }
    }
    let aws = AwsSigV4Config {
        region: a.aws_region,
        service: a.aws_service,
    };
    // The flags are --aws-region and --aws-service: the key named by the error, prefixed.
    aws.validate().map_err(|e| anyhow!("--aws-{e}"))?;
    if let Some(aud) = &a.google_audience {
        config::validate_audience(aud).map_err(|e| anyhow!("--google-audience: {e}"))?;
    }
    // A key file is read at each check (a rotated key is picked up), so it is kept by its
    // absolute path; one that holds no key is refused now, not at the first card.
    let mut card_keys: Vec<String> = Vec::new();
    for f in &a.card_key {
        a2a_mod_a2a::load_card_keys(f).map_err(|e| {
            anyhow!(
                "--card-key: {e} — give the worker's public key as PEM (BEGIN PUBLIC KEY) or JWK"
            )
        })?;
        let abs = std::path::absolute(f).unwrap_or_else(|_| f.clone());
        let shown = abs.display().to_string();
        if !card_keys.contains(&shown) {
            card_keys.push(shown);
        }
    }
    if a.require_signed_card && a.no_check {
        return Err(anyhow!(
            "--require-signed-card checks the card, which --no-check skips — drop one of them"
        ));
    }
    if let Some(u) = &a.oauth_token_url {
        if url::Url::parse(u).is_ok_and(|u| config::has_userinfo(&u)) {
            return Err(userinfo_refused("--oauth-token-url", u));
        }
        config::validate_url(u)
            .map_err(|e| anyhow!("--oauth-token-url: {e} — give the token endpoint's URL"))?;
    }
    let cfg = WorkerConfig {
        url: a.url.trim_end_matches('/').to_string(),
        bearer_env: a.bearer_env,
        api_key_env: a.api_key_env,
        api_key_header: a.api_key_header,
        token_cmd: a.token_cmd,
        oauth: a.oauth_client_id.map(|client_id| OAuthConfig {
            client_id,
            client_secret_env: a.oauth_secret_env.unwrap_or_default(),
            token_url: a.oauth_token_url,
            scope: a.oauth_scope,
        }),
        aws_sigv4: a.aws_sigv4.then_some(aws),
        google: a.google.then_some(GoogleConfig {
            audience: a.google_audience,
        }),
        protocol: None,
        allow_origins,
        extensions,
        card_keys,
        require_signed_card: a.require_signed_card,
        approvals: a.approvals.map(Into::into),
    };
    let existed = load(ctx)?.workers.contains_key(&a.alias);
    let card = if a.no_check {
        None
    } else {
        Some(fetch_card(&a.alias, &cfg)?)
    };
    config::save_worker(&ctx.config_path(), &a.alias, &cfg)?;
    let verb = if existed { "updated" } else { "added" };
    match card {
        Some(c) => out(&format!(
            "{verb} worker {:?}: {} ({})",
            a.alias, c.name, c.protocol
        )),
        None => out(&format!("{verb} worker {:?} (card not checked)", a.alias)),
    }
}

/// A URL with userinfo carries a secret that would be printed wherever the URL is; the message
/// shows it with the userinfo cut out.
fn userinfo_refused(what: &str, url: &str) -> anyhow::Error {
    let shown = url::Url::parse(url)
        .map(|u| config::without_userinfo(&u))
        .unwrap_or_default();
    anyhow!(
        "{what} {shown:?} has a user name or password in it — pass the secret through the \
         environment or a command instead: --bearer-env VAR or --token-cmd CMD"
    )
}

/// `--allow-origin URL` as stored: the URL's origin, `scheme://host[:port]`.
fn allowed_origin(url: &str) -> Result<String> {
    let u = url::Url::parse(url.trim()).ok();
    if u.as_ref().is_some_and(config::has_userinfo) {
        return Err(userinfo_refused("--allow-origin", url));
    }
    match u.filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some()) {
        Some(u) => Ok(u.origin().ascii_serialization()),
        // Unparsed text with an '@' may hold a password: not echoed.
        None if url.contains('@') => Err(anyhow!(
            "--allow-origin: not an http(s) URL — give an origin, e.g. https://agent.example.com:8443"
        )),
        None => Err(anyhow!(
            "--allow-origin {url:?} is not an http(s) URL — give an origin, e.g. https://agent.example.com:8443"
        )),
    }
}

fn remove(ctx: &Ctx, alias: &str) -> Result<()> {
    if !config::remove_worker(&ctx.config_path(), alias)? {
        return Err(anyhow!(
            "worker {alias:?} not found — run `a2a-mod worker list`"
        ));
    }
    // Live tasks of this worker, in every session, stop being tracked; Claude is told with the
    // next wake-up or hidden context.
    let now = now_ms();
    let mut dropped = 0;
    for id in session::list(ctx) {
        let path = SessionPaths::of_owner(ctx, &id).db;
        match Store::open(&path).and_then(|s| s.end_removed(alias, now)) {
            Ok(n) => dropped += n,
            Err(e) => tracing::warn!("cannot update {}: {e:#}", path.display()),
        }
    }
    if dropped > 0 {
        out(&format!(
            "removed worker {alias:?}; {dropped} live task(s) no longer tracked (Claude will be told)"
        ))
    } else {
        out(&format!("removed worker {alias:?}"))
    }
}

fn auth_of(w: &WorkerConfig) -> String {
    if let Some(v) = &w.bearer_env {
        format!("bearer from ${v}")
    } else if let Some(v) = &w.api_key_env {
        format!(
            "api key from ${v} in {}",
            w.api_key_header.as_deref().unwrap_or("the card's header")
        )
    } else if w.token_cmd.is_some() {
        "token command".into()
    } else if let Some(o) = &w.oauth {
        format!("oauth2 client credentials ({})", o.client_id)
    } else if let Some(a) = &w.aws_sigv4 {
        let region = a.region.as_deref().unwrap_or("from AWS_REGION or the host");
        let service = a
            .service
            .as_deref()
            .unwrap_or(a2a_mod_a2a::AWS_DEFAULT_SERVICE);
        format!("aws sigv4 ({service}, region {region})")
    } else if let Some(g) = &w.google {
        match a2a_mod_a2a::google_token_kind(g, &w.url) {
            Some(aud) => format!("google id token (audience {aud})"),
            None => "google access token (cloud-platform)".into(),
        }
    } else {
        "none".into()
    }
}

fn list(ctx: &Ctx, json: bool) -> Result<()> {
    let cfg = load(ctx)?;
    if json {
        let v: Vec<_> = cfg
            .workers
            .iter()
            .map(|(alias, w)| serde_json::json!({"alias": alias, "url": w.url, "auth": auth_of(w)}))
            .collect();
        return out_json(&v);
    }
    if cfg.workers.is_empty() {
        return out("no workers — add one with `a2a-mod worker add <alias> <url>`");
    }
    let text: String = cfg
        .workers
        .iter()
        .map(|(alias, w)| format!("{alias}  {}  auth: {}\n", w.url, auth_of(w)))
        .collect();
    out(&text)
}

fn show(ctx: &Ctx, alias: &str, json: bool) -> Result<()> {
    let cfg = load(ctx)?;
    let w = cfg.worker(alias)?;
    let worker = Worker::new(alias, w.clone(), a2a_mod_a2a::http_client());
    let rt = runtime()?;
    let card = rt
        .block_on(worker.card(tokio::time::Instant::now() + CARD_TIMEOUT))
        .map_err(|e| worker_error(alias, &w.url, &e))?;
    // A signature that cannot be checked is a verdict, not a failure (unless the worker
    // requires one, and then the card above was refused already).
    let signature = rt
        .block_on(worker.card_signature(tokio::time::Instant::now() + CARD_TIMEOUT))
        .map_err(|e| worker_error(alias, &w.url, &e))?
        .to_string();
    // The extended card needs the credentials; one that cannot be had is a line, not a failure.
    let extended = rt
        .block_on(worker.extended_card(tokio::time::Instant::now() + CARD_TIMEOUT))
        .map_err(|e| worker_error(alias, &w.url, &e).to_string());
    if json {
        let (ext, ext_error) = match &extended {
            Ok(x) => (serde_json::json!(x), None),
            Err(e) => (serde_json::Value::Null, Some(e)),
        };
        return out_json(&serde_json::json!({
            "alias": alias, "url": w.url, "auth": auth_of(w), "extensions": w.extensions,
            "card": card, "signature": signature, "extendedCard": ext, "extendedCardError": ext_error
        }));
    }
    let mut text = format!(
        "{alias}: {}\n  url: {}\n  protocol: {}\n  auth configured: {}\n  card asks for: {}\n",
        card.name,
        w.url,
        card.protocol,
        auth_of(w),
        if card.auth.is_empty() {
            "nothing".to_string()
        } else {
            card.auth.join(", ")
        }
    );
    text.push_str(&format!("  signature: {signature}\n"));
    if !w.allow_origins.is_empty() {
        text.push_str(&format!("  also trusted: {}\n", w.allow_origins.join(", ")));
    }
    if !card.extensions.is_empty() {
        let offered = card.extensions.join(", ");
        text.push_str(&format!("  card offers extensions: {offered}\n"));
    }
    if !w.extensions.is_empty() {
        text.push_str(&format!(
            "  extensions asked for: {}\n",
            w.extensions.join(", ")
        ));
    }
    if !card.description.is_empty() {
        text.push_str(&format!("  {}\n", card.description));
    }
    for s in &card.skills {
        text.push_str(&format!("  skill {}: {}\n", s.name, s.description));
    }
    match extended {
        Ok(None) => {}
        Ok(Some(x)) => {
            text.push_str(&format!("  extended card (with credentials): {}\n", x.name));
            for s in x
                .skills
                .iter()
                .filter(|s| !card.skills.iter().any(|p| p.id == s.id))
            {
                text.push_str(&format!(
                    "  skill {}: {} (extended card)\n",
                    s.name, s.description
                ));
            }
        }
        Err(e) => text.push_str(&format!("  extended card: not read: {e}\n")),
    }
    out(&text)
}
