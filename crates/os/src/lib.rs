//! a2a-mod's view of the machine: the environment, read in one module ([`mod@env`]); private files
//! written atomically ([`fsx`]); processes, signals and descriptors ([`process`]); ids ([`ids`]);
//! and secrets that never print ([`secret`]). No async runtime and no HTTP client: the status line
//! and the hooks use all of it. The config file is its own crate, `a2a-mod-config`, over this one.
//!
//! Every call into the C library is here, and so every `unsafe` block of a2a-mod: each other
//! crate, the tests and the benchmarks have `#![forbid(unsafe_code)]`, and `libc` is in this
//! crate's manifest alone (`tests/it/arch.rs` holds both). What only the tests and benchmarks ask
//! of the kernel is in `testing.rs`, behind the `testing` feature.

pub mod env;
pub mod fsx;
pub mod ids;
pub mod process;
pub mod secret;
#[cfg(feature = "testing")]
pub mod testing;
