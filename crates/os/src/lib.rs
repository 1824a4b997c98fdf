//! a2a-mod's view of the machine: the environment, read in one module ([`mod@env`]); private files
//! written atomically ([`fsx`]); ids ([`ids`]); and secrets that never print ([`secret`]). No async
//! runtime and no HTTP client: the status line and the hooks use all of it. The config file is its
//! own crate, `a2a-mod-config`, over this one.

pub mod env;
pub mod fsx;
pub mod ids;
pub mod secret;
