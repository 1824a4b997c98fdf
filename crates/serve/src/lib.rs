//! `a2a-mod serve`: this machine as an A2A worker whose tasks are headless Claude Code runs.
//!
//! - [`conn`]: the connections, their bound and timeouts; [`guard`]: the browser guard every
//!   request passes first;
//! - [`http`]: the routes (JSON-RPC, HTTP+JSON, the cards, `/healthz`), the token check, the body
//!   bound; [`stream`]: a task's events as SSE, every reader on the one event log;
//! - [`wire`]: the A2A JSON in its four forms, pure;
//! - [`engine`]: the tasks, the queue, the [`engine::Executor`] trait, the store; [`push`], the
//!   webhooks clients register and what they are sent, [`deliver`], each change POSTed to them;
//! - [`task`]: a task and what a run reports, pure;
//! - [`inbox`]: the files a message brings, written where the run finds them; [`changes`], what
//!   a run changed in a git work tree, as a patch;
//! - [`claude`]: the Claude Code executor; `exec.rs`, an agent's own command in its place;
//!   [`ask`], its permission prompts and questions as the client's `input-required`;
//! - `server.rs`: a server bound and running ([`Serving`]) with its [`Options`].

#![forbid(unsafe_code)]

pub mod ask;
pub mod changes;
pub mod claude;
pub mod conn;
pub mod deliver;
pub mod engine;
pub mod exec;
pub mod guard;
pub mod http;
pub mod inbox;
mod process;
pub mod push;
mod server;
pub mod stream;
pub mod task;
pub mod wire;

pub use server::{DRAIN, Options, Serving};
