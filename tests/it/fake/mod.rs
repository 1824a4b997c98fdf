//! In-process fakes the integration tests run against: real servers on 127.0.0.1:0 that stop on
//! drop. `model_api` stands in for the Anthropic Messages API behind the real Claude Code CLI.

pub mod model_api;
