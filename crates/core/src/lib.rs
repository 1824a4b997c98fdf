//! The product's behaviour as plain functions over plain data. PURE: no IO, no async, no env, no
//! clock reads; `now` is always a parameter (CONTRIBUTING.md, "A pure core"). `tests/it/arch.rs`
//! keeps it that way.
//!
//! The compiler holds the layer: this crate depends on no other crate of the workspace, so the
//! A2A client, the store and every runtime are out of its reach. What it has compiles:
//!
//! ```
//! use a2a_mod_core::lifecycle::TaskKey;
//! assert_eq!(TaskKey::new("fake", "t1").to_string(), "fake task t1");
//! ```
//!
//! and naming the A2A client does not (`tests/run.sh` runs these):
//!
//! ```compile_fail,E0432
//! use a2a_mod_a2a::Worker;
//! ```

#![forbid(unsafe_code)]

pub mod artifact;
pub mod batch;
pub mod bounds;
pub mod clock;
pub mod ending;
pub mod fence;
pub mod inline;
pub mod lifecycle;
#[cfg(test)]
mod proptests;
pub mod schedule;
pub mod status;
pub mod task;
pub mod text;
pub mod theme;
pub mod wake;
