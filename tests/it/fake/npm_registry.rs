//! An npm registry of the tests' own: serves the tarballs `scripts/package-npm` wrote (each
//! package's document and its tarball), so `npm i -g a2a-mod` and Claude Code's install of an
//! npm-sourced plugin run as against registry.npmjs.org without leaving 127.0.0.1. A package it
//! was not given answers 404, as the registry does for a platform nobody built. Records the paths
//! asked for. On 127.0.0.1, its own thread and runtime (`fake::Background`).

use crate::util::TestCommand;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

struct Shared {
    /// Package name → its registry document.
    documents: HashMap<String, Value>,
    /// `/<name>/-/<name>-<version>.tgz` → the tarball.
    tarballs: HashMap<String, Vec<u8>>,
    asked: Mutex<Vec<String>>,
}

pub struct NpmRegistry {
    /// With the trailing slash, as npm's `registry` setting has it.
    pub url: String,
    shared: Arc<OnceLock<Shared>>,
    _server: super::Background,
}

impl NpmRegistry {
    /// Serves `tarballs` (npm pack's output), one version each.
    pub fn start(tarballs: &[&Path]) -> NpmRegistry {
        let mut shared = Shared {
            documents: HashMap::new(),
            tarballs: HashMap::new(),
            asked: Mutex::new(Vec::new()),
        };
        let mut manifests = Vec::new();
        for tgz in tarballs {
            let manifest: Value = serde_json::from_str(
                &TestCommand::program("tar")
                    .arg("-xzOf")
                    .arg(tgz)
                    .arg("package/package.json")
                    .ok(),
            )
            .unwrap();
            manifests.push((manifest, std::fs::read(tgz).unwrap()));
        }
        // The documents name the tarballs' links, which need the port: serve first, fill after.
        let cell = Arc::new(OnceLock::new());
        let app = Router::new().fallback(handle).with_state(cell.clone());
        let server = super::Background::start("fake-npm-registry", app);
        let url = format!("http://{}/", server.addr);
        for (mut manifest, bytes) in manifests {
            let name = manifest["name"].as_str().unwrap().to_owned();
            let version = manifest["version"].as_str().unwrap().to_owned();
            let path = format!("/{name}/-/{name}-{version}.tgz");
            let sha512 = ring::digest::digest(&ring::digest::SHA512, &bytes);
            manifest["_id"] = json!(format!("{name}@{version}"));
            manifest["dist"] = json!({
                "tarball": format!("{}{}", url.trim_end_matches('/'), path),
                "integrity": format!(
                    "sha512-{}",
                    base64::engine::general_purpose::STANDARD.encode(sha512.as_ref())
                ),
            });
            shared.documents.insert(
                name.clone(),
                json!({"name": name, "dist-tags": {"latest": version}, "versions": {version: manifest}}),
            );
            shared.tarballs.insert(path, bytes);
        }
        assert!(cell.set(shared).is_ok());
        NpmRegistry {
            url,
            shared: cell,
            _server: server,
        }
    }

    /// The paths asked for so far, in order.
    pub fn asked(&self) -> Vec<String> {
        self.shared.get().unwrap().asked.lock().unwrap().clone()
    }

    /// An `.npmrc` for HOME that sends every npm run to this registry, with a cache of its own in
    /// `cache` and nothing else asked of the network (no update check, audit or funding).
    pub fn write_npmrc(&self, home: &Path, cache: &Path) {
        std::fs::write(
            home.join(".npmrc"),
            format!(
                "registry={}\ncache={}\nupdate-notifier=false\naudit=false\nfund=false\n",
                self.url,
                cache.display()
            ),
        )
        .unwrap();
    }
}

async fn handle(State(cell): State<Arc<OnceLock<Shared>>>, uri: Uri) -> Response {
    let Some(shared) = cell.get() else {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    };
    let path = uri.path().to_owned();
    shared.asked.lock().unwrap().push(path.clone());
    if let Some(bytes) = shared.tarballs.get(&path) {
        return (
            [(header::CONTENT_TYPE, "application/octet-stream")],
            bytes.clone(),
        )
            .into_response();
    }
    match shared.documents.get(path.trim_start_matches('/')) {
        Some(doc) => axum::Json(doc.clone()).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}
