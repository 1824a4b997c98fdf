//! a2a-mod's view of the machine: the environment, read in one module ([`mod@env`]); private files
//! written atomically ([`fsx`]); ids ([`ids`]); secrets that never print ([`secret`]); and the
//! config file ([`config`]). No async runtime and no HTTP client: the status line and the hooks
//! use all of it.

pub mod config;
pub mod env;
pub mod fsx;
pub mod ids;
pub mod secret;
