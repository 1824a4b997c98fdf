//! `config.toml`, a2a-mod's one config file: read by every entry point (the status line and the
//! hooks too, so no async runtime and no HTTP client here), written by `worker add`/`remove` and
//! `serve`'s set-up. It must not read the environment (the machine layer's `env` does) or print.

#![forbid(unsafe_code)]

mod config;

pub use config::*;
