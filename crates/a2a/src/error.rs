//! [`A2aError`]: what went wrong with a worker, classified for the callers that branch on it.

/// Errors the callers branch on (CONTRIBUTING.md, "Typed errors"): the poller clears the token on
/// `Auth`, counts `Timeout`/`Unreachable`/`Protocol` as failed polls, stops on `TaskNotFound`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum A2aError {
    /// `by` names the credentials refused ("the keys in AWS_ACCESS_KEY_ID…"), never their value.
    #[error("the worker refused our credentials (HTTP {status}){}", by.as_ref().map(|b| format!(": {b}")).unwrap_or_default())]
    Auth { status: u16, by: Option<String> },
    #[error("no answer within {0:.1} s")]
    Timeout(f64),
    #[error("cannot reach the worker: {0}")]
    Unreachable(String),
    #[error("the worker's answer is not A2A: {0}")]
    Protocol(String),
    /// The card would send requests or credentials to an origin the user did not give at
    /// `worker add` (nor allow with `--allow-origin`); nothing was sent there.
    #[error("{what}, not an origin the worker was added with")]
    Untrusted { what: String, origin: String },
    #[error("the worker no longer knows this task (it may have restarted)")]
    TaskNotFound,
    #[error("the task can no longer be canceled")]
    NotCancelable,
    /// JSON-RPC -32008 / REST `EXTENSION_SUPPORT_REQUIRED`: the worker serves only clients that
    /// use an extension a2a-mod was not asked to; the worker's words, one clean bounded line, and
    /// the URIs its card marks required that a2a-mod does not send (what to add, when the
    /// worker's words do not name it).
    #[error("the worker requires an A2A extension a2a-mod was not told to use: \"{said}\"")]
    ExtensionRequired { said: String, required: Vec<String> },
    /// The agent answered a valid request with an error of its own (JSON-RPC or REST): its words,
    /// already one clean bounded line (`wire::parse_jsonrpc`).
    #[error("the worker answered: \"{message}\" (error {code})")]
    Rpc { code: i64, message: String },
    /// HTTP 429 or 503: the worker is there but will not serve now. With `Retry-After` it said
    /// when to come back, and a poll is put off that long instead of counting as failed.
    #[error("the worker is {} (HTTP {status}){}", overload_word(*status), retry_words(*retry_after))]
    Overloaded {
        status: u16,
        retry_after: Option<std::time::Duration>,
    },
    /// An id the worker chose (task or context id) that cannot be shown or quoted safely
    /// (`core::bounds::plain_id`): the answer is refused and nothing is tracked under it.
    #[error(
        "the worker's {0} is not usable (it has spaces, control characters, quotes or angle brackets, or is longer than 200 characters)"
    )]
    UnusableId(&'static str),
    /// Our side could not produce credentials (unset env var, failing `token_cmd`, token endpoint
    /// refusal): the user must fix config or environment, the worker was not asked.
    #[error("cannot get credentials for the worker: {0}")]
    Credentials(String),
    /// `require_signed_card` is on and no signature of the card holds: the verdict, as
    /// `worker show` prints it. Nothing but the card was asked for.
    #[error(
        "its agent card is not verified (signature: {0}), and the worker requires a signed card"
    )]
    UnsignedCard(String),
    /// The stream sent more than this many updates in a row that changed nothing, within a
    /// second (`core::schedule::FLOOD_NOOPS`): it is dropped, and polls carry the task.
    #[error(
        "the worker's stream sent more than {0} updates in a row that changed nothing, within a second; the task is polled instead"
    )]
    Flooded(u32),
}

impl A2aError {
    /// A JSON-RPC error answer as the callers branch on it: the A2A codes they act on, any other
    /// as `Rpc`. One table for plain calls and streams.
    /// The worker took the request and refused it, an A2A error of its own about it (not a
    /// refusal of our credentials, a busy server or a broken answer).
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            A2aError::Rpc { .. }
                | A2aError::TaskNotFound
                | A2aError::NotCancelable
                | A2aError::ExtensionRequired { .. }
        )
    }

    pub(crate) fn from_rpc(code: i64, message: String) -> A2aError {
        use a2a_mod_proto::error::{
            EXTENSION_SUPPORT_REQUIRED, TASK_NOT_CANCELABLE, TASK_NOT_FOUND,
        };
        match code {
            TASK_NOT_FOUND => A2aError::TaskNotFound,
            TASK_NOT_CANCELABLE => A2aError::NotCancelable,
            EXTENSION_SUPPORT_REQUIRED => A2aError::ExtensionRequired {
                said: message,
                required: Vec::new(),
            },
            _ => A2aError::Rpc { code, message },
        }
    }
}

pub(crate) fn overload_word(status: u16) -> &'static str {
    if status == 503 {
        "unavailable"
    } else {
        "overloaded"
    }
}

fn retry_words(after: Option<std::time::Duration>) -> String {
    after
        .map(|d| format!(" and asks to come back in {} s", d.as_secs()))
        .unwrap_or_default()
}
