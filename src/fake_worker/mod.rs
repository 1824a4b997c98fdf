//! The embedded scripted A2A worker (INTERFACES.md "The embedded fake worker"). Placeholder.
