//! Placeholder until the client lands: every call fails as a protocol error.

use super::{A2aError, CardSummary, TaskView};
use crate::config::WorkerConfig;
use tokio::time::Instant;

pub fn http_client() -> reqwest::Client {
    reqwest::Client::new()
}

pub struct Worker {
    pub alias: String,
    pub config: WorkerConfig,
    #[allow(dead_code)]
    http: reqwest::Client,
}

impl Worker {
    pub fn new(alias: &str, config: WorkerConfig, http: reqwest::Client) -> Worker {
        Worker {
            alias: alias.to_string(),
            config,
            http,
        }
    }
    pub async fn card(&self, _deadline: Instant) -> Result<CardSummary, A2aError> {
        Err(A2aError::Protocol("client not built".into()))
    }
    pub async fn send(
        &self,
        _text: &str,
        _task_id: Option<&str>,
        _context_id: Option<&str>,
        _deadline: Instant,
    ) -> Result<TaskView, A2aError> {
        Err(A2aError::Protocol("client not built".into()))
    }
    pub async fn get_task(&self, _task_id: &str, _deadline: Instant) -> Result<TaskView, A2aError> {
        Err(A2aError::Protocol("client not built".into()))
    }
    pub async fn cancel(&self, _task_id: &str, _deadline: Instant) -> Result<TaskView, A2aError> {
        Err(A2aError::Protocol("client not built".into()))
    }
}
