//! Errors as one line each: what failed, why, and what to do.

use a2a_mod_a2a::A2aError;
use a2a_mod_core::fence;
use anyhow::anyhow;

pub(super) fn unknown_task(task_id: &str, worker: Option<&str>) -> anyhow::Error {
    // The id came from Claude or the user: quoted and escaped unless plain.
    let task_id = fence::shown(task_id);
    match worker {
        Some(w) => anyhow!(
            "task {task_id} of worker {w:?} is not in this session — use the taskId that send returned (the tasks tool lists them)"
        ),
        None => anyhow!(
            "task {task_id} is not in this session — use the taskId that send returned (the tasks tool lists them)"
        ),
    }
}

/// One line that says what failed, why, and what to do.
pub fn worker_error(alias: &str, url: &str, e: &A2aError) -> anyhow::Error {
    let fix = match e {
        A2aError::Auth { .. } => {
            format!("check the credentials configured for it (`a2a-mod worker show {alias}`)")
        }
        A2aError::Timeout(_) => "the worker is slow or stuck; try again later".to_string(),
        A2aError::Unreachable(_) => format!("check that it is running at {url}"),
        // Only an answer that is not A2A at all puts the URL in doubt; an agent that answered
        // with an error of its own is there and spoke.
        A2aError::Protocol(_) => {
            format!("check that {url} is an A2A agent (`a2a-mod worker show {alias}`)")
        }
        A2aError::Rpc { code, .. } => rpc_fix(*code, alias),
        A2aError::Untrusted { origin, .. } => {
            format!("if you trust it, pass --allow-origin {origin} to `a2a-mod worker add {alias}`")
        }
        A2aError::TaskNotFound => "send the work again".to_string(),
        A2aError::Overloaded { .. } => "try again later".to_string(),
        A2aError::UnusableId(_) => {
            "a2a-mod tracks nothing under such an id; ask the worker's operator for plain ids"
                .to_string()
        }
        A2aError::NotCancelable => "it has already ended".to_string(),
        A2aError::ExtensionRequired { required, .. } if !required.is_empty() => format!(
            "its card marks {} required: add {} with `a2a-mod worker add {alias} {url} {}`",
            required.join(", "),
            if required.len() == 1 { "it" } else { "them" },
            required
                .iter()
                .map(|u| format!("--extension {u}"))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        A2aError::ExtensionRequired { .. } => format!(
            "add the extension's URI (`a2a-mod worker show {alias}` lists the card's) with `a2a-mod worker add {alias} {url} --extension URI`"
        ),
        A2aError::Credentials(_) => {
            format!("fix the credentials of worker {alias:?} in config.toml or the environment")
        }
        A2aError::Flooded(_) => "nothing; the task is polled".to_string(),
        A2aError::UnsignedCard(_) => format!(
            "pin the worker's key with `a2a-mod worker add {alias} {url} --card-key FILE --require-signed-card`, or add it without --require-signed-card"
        ),
    };
    anyhow!("worker {alias:?}: {e} — {fix}")
}

/// What to do about an agent's own error, by its code (docs/a2a.md: the A2A and JSON-RPC codes).
fn rpc_fix(code: i64, alias: &str) -> String {
    use a2a_mod_proto::error::{
        CONTENT_TYPE_NOT_SUPPORTED, EXTENSION_SUPPORT_REQUIRED, INVALID_PARAMS,
        UNSUPPORTED_OPERATION,
    };
    match code {
        INVALID_PARAMS => {
            "the worker refused what was sent: change the message, files or data and send again"
                .into()
        }
        UNSUPPORTED_OPERATION => format!(
            "the worker does not do this (for a task that already ended, send a new message without its taskId; see `a2a-mod worker show {alias}`)"
        ),
        CONTENT_TYPE_NOT_SUPPORTED => format!(
            "the worker does not take this kind of content (the input modes its skills take: `a2a-mod worker show {alias}`)"
        ),
        EXTENSION_SUPPORT_REQUIRED => format!(
            "the worker needs an A2A extension a2a-mod does not send (`a2a-mod worker show {alias}`)"
        ),
        _ => "the worker could not do it; try again later, or ask its operator".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The extension to add is named when the card says which; a meaning gets one hint, whatever
    /// the binding the error came by (the client reads REST reasons as the JSON-RPC codes).
    #[test]
    fn hints_name_what_to_do() {
        let e = A2aError::ExtensionRequired {
            said: "Extension support required".into(),
            required: vec!["https://ext.example/needed/v1".into()],
        };
        assert_eq!(
            worker_error("w", "http://h:1", &e).to_string(),
            "worker \"w\": the worker requires an A2A extension a2a-mod was not told to use: \"Extension support required\" — its card marks https://ext.example/needed/v1 required: add it with `a2a-mod worker add w http://h:1 --extension https://ext.example/needed/v1`"
        );
        let ended = A2aError::Rpc {
            code: -32004,
            message: "Task t1 is in terminal state".into(),
        };
        assert!(
            worker_error("w", "http://h:1", &ended)
                .to_string()
                .contains("send a new message without its taskId")
        );
    }
}
