//! The embedded scripted A2A worker (docs/commands-and-tools.md "The embedded fake worker"): a real A2A agent
//! on 127.0.0.1 speaking v1 and v0.3 JSON-RPC, whose message text is a script (`slow N <words>`,
//! `ask <question>`, `fail <why>`, `reject`, `auth`, `silent`, `parts` (describes the parts it
//! received, `echo.rs`), anything else echoes).
//!
//! Used in process by tests and `a2a-mod demo` ([`FakeWorker::start`]), and as the
//! `a2a-mod fake-worker` command (`src/cmd/fake_worker.rs`). Every request is recorded as a
//! [`RequestEvent`] (and appended as a JSON line to the `log` file) so tests can check what the
//! client did and when.
//!
//! Behaviour worth knowing, beyond docs/commands-and-tools.md:
//! - A non-blocking send (`returnImmediately: true` / `blocking: false`) answers the task in its
//!   first state, `submitted`, like the Python and JS SDKs. A blocking send does not wait either:
//!   it answers the task's state at that instant (`completed` for an echo, `working` for `slow`).
//!   A follow-up on an `ask`/`auth` task answers the task already `completed`, blocking or not
//!   (docs/a2a.md: clients must handle any state in a send response).
//! - `silent`: the send is answered (`submitted`); every GetTask/CancelTask on that task is held
//!   open until the worker stops, then answered HTTP 503. Such requests are recorded with status 0
//!   when they start hanging.
//! - OAuth (`oauth_ttl`): `POST /oauth/token` accepts any client id and secret, sent by HTTP Basic
//!   or in the form body, but refuses a request with neither (401 `invalid_client`).
//!   `expires_in` is the ttl rounded up to whole seconds (at least 1), while the server expires the
//!   token after the exact ttl.
//! - When both a bearer token and OAuth are set, either credential is accepted.
//! - Streaming ([`StreamMode`], off by default so the seed's tests see plain calls): a stream
//!   send answers the task `submitted`, then its artifact in two appended chunks and its status
//!   updates the moment the clock or a follow-up changes them; a subscription starts with the
//!   whole task and is refused (-32004) for an ended one. `subscribe_faults_only` keeps a fault
//!   to subscriptions.

#![forbid(unsafe_code)]

mod echo;
mod options;
mod script;
mod server;
#[cfg(test)]
mod tests;
mod wire;
mod worker;

pub use options::{FakeWorkerOptions, RequestEvent, StreamMode};
pub use script::token_text;
pub use worker::FakeWorker;
