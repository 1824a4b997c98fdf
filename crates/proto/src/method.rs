//! The A2A methods, one enum for every side: each with its JSON-RPC name in each dialect (v1
//! `SendMessage`, v0.3 `message/send`), read back by [`Method::from_rpc`].

use crate::wire::Dialect;

/// One A2A operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    Send,
    /// SendMessage with the answer as an SSE stream.
    Stream,
    Get,
    Cancel,
    /// A stream of a task's changes from now on (v0.3 `tasks/resubscribe`).
    Subscribe,
    List,
    /// The extended agent card, for a client with credentials.
    ExtendedCard,
    /// A task's push notification configs: where its changes are POSTed.
    CreatePushConfig,
    GetPushConfig,
    ListPushConfigs,
    DeletePushConfig,
}

/// Every method, in one list: the tables below are checked against it.
pub const ALL: [Method; 11] = [
    Method::Send,
    Method::Stream,
    Method::Get,
    Method::Cancel,
    Method::Subscribe,
    Method::List,
    Method::ExtendedCard,
    Method::CreatePushConfig,
    Method::GetPushConfig,
    Method::ListPushConfigs,
    Method::DeletePushConfig,
];

impl Method {
    /// The JSON-RPC method name in `dialect`. v0.3's JSON-RPC has no `tasks/list` (its REST and
    /// gRPC have ListTasks); the name is what a2a-sdk 0.3.x's REST-to-RPC mapping uses.
    pub fn rpc_name(self, dialect: Dialect) -> &'static str {
        match (self, dialect) {
            (Method::Send, Dialect::V1) => "SendMessage",
            (Method::Stream, Dialect::V1) => "SendStreamingMessage",
            (Method::Get, Dialect::V1) => "GetTask",
            (Method::Cancel, Dialect::V1) => "CancelTask",
            (Method::Subscribe, Dialect::V1) => "SubscribeToTask",
            (Method::List, Dialect::V1) => "ListTasks",
            (Method::ExtendedCard, Dialect::V1) => "GetExtendedAgentCard",
            (Method::CreatePushConfig, Dialect::V1) => "CreateTaskPushNotificationConfig",
            (Method::GetPushConfig, Dialect::V1) => "GetTaskPushNotificationConfig",
            (Method::ListPushConfigs, Dialect::V1) => "ListTaskPushNotificationConfigs",
            (Method::DeletePushConfig, Dialect::V1) => "DeleteTaskPushNotificationConfig",
            (Method::Send, Dialect::V03) => "message/send",
            (Method::Stream, Dialect::V03) => "message/stream",
            (Method::Get, Dialect::V03) => "tasks/get",
            (Method::Cancel, Dialect::V03) => "tasks/cancel",
            (Method::Subscribe, Dialect::V03) => "tasks/resubscribe",
            (Method::List, Dialect::V03) => "tasks/list",
            (Method::ExtendedCard, Dialect::V03) => "agent/getAuthenticatedExtendedCard",
            (Method::CreatePushConfig, Dialect::V03) => "tasks/pushNotificationConfig/set",
            (Method::GetPushConfig, Dialect::V03) => "tasks/pushNotificationConfig/get",
            (Method::ListPushConfigs, Dialect::V03) => "tasks/pushNotificationConfig/list",
            (Method::DeletePushConfig, Dialect::V03) => "tasks/pushNotificationConfig/delete",
        }
    }

    /// The method and dialect a JSON-RPC method name says; `None` for a name A2A does not have.
    pub fn from_rpc(name: &str) -> Option<(Method, Dialect)> {
        [Dialect::V1, Dialect::V03]
            .into_iter()
            .flat_map(|d| ALL.into_iter().map(move |m| (m, d)))
            .find(|(m, d)| m.rpc_name(*d) == name)
    }

    /// Whether it reads or writes a task's push notification configs.
    pub fn is_push_config(self) -> bool {
        matches!(
            self,
            Method::CreatePushConfig
                | Method::GetPushConfig
                | Method::ListPushConfigs
                | Method::DeletePushConfig
        )
    }

    /// Whether its answer is an SSE stream.
    pub fn streams(self) -> bool {
        matches!(self, Method::Stream | Method::Subscribe)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_reads_back_as_its_method() {
        for d in [Dialect::V1, Dialect::V03] {
            for m in ALL {
                assert_eq!(Method::from_rpc(m.rpc_name(d)), Some((m, d)));
            }
        }
        assert_eq!(
            Method::from_rpc("tasks/pushNotificationConfig/set"),
            Some((Method::CreatePushConfig, Dialect::V03))
        );
        assert_eq!(Method::from_rpc("tasks/pushNotificationConfig/put"), None);
        assert_eq!(Method::from_rpc(""), None);
    }
}
