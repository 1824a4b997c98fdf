//! The single integration-test binary (STYLE.md): one module per surface.

mod statusline;
