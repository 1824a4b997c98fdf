//! The product's behaviour as plain functions over plain data. PURE: no IO, no async, no env, no
//! clock reads; `now` is always a parameter (CONTRIBUTING.md, "A pure core"). `tests/it/arch.rs`
//! keeps it that way.

pub mod artifact;
pub mod bounds;
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
