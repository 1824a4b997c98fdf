//! Push notification configs: where a server POSTs a task's changes, as clients write them and
//! as a server answers them, in every dialect.
//!
//! The shapes (A2A v1.0 §4.3, §9.4.7; v0.3 §7.5–7.8):
//! - v1: a flat `TaskPushNotificationConfig` (`taskId`, `id`, `url`, `token`,
//!   `authentication: {scheme, credentials}`), the proto's `task_id` too; inline in a send as
//!   `configuration.taskPushNotificationConfig`;
//! - v0.3 JSON-RPC: `{taskId, pushNotificationConfig: {id, url, token, authentication:
//!   {schemes: [...], credentials}}}`, inline as `configuration.pushNotificationConfig`; its get
//!   and delete name the task `id` and the config `pushNotificationConfigId`;
//! - v0.3 HTTP+JSON: `{parent: "tasks/T", configId, config: {name,
//!   pushNotificationConfig: {...}}}`, answered as `{name: "tasks/T/pushNotificationConfigs/C",
//!   pushNotificationConfig}`.

use crate::lenient::{List, Obj, Str, from_object};
use crate::read::Field;
use crate::wire::{Binding, Dialect, Wire};
use serde::Deserialize;
use serde_json::{Value, json};

/// A config as a client sent it, any shape read into one.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Config {
    /// The task it is for, as sent (a server refuses one that is not an id).
    pub task_id: Field,
    /// The client's name for it; unset names it after the task (as the SDKs do).
    pub id: Field,
    pub url: Option<String>,
    /// Sent back in `X-A2A-Notification-Token`.
    pub token: Option<String>,
    /// `Authorization: <scheme> <credentials>`: v1's `scheme`, v0.3's first of `schemes`.
    pub scheme: Option<String>,
    pub credentials: Option<String>,
}

/// Which of a task's configs a get, list or delete names.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Target {
    pub task_id: Field,
    /// `None` for a list, or a v0.3 get that names only the task (its config named after it).
    pub id: Field,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Shape<'a> {
    #[serde(borrow)]
    task_id: Str<'a>,
    #[serde(borrow, rename = "task_id")]
    task_id_snake: Str<'a>,
    #[serde(borrow)]
    id: Str<'a>,
    #[serde(borrow)]
    url: Str<'a>,
    #[serde(borrow)]
    token: Str<'a>,
    #[serde(borrow)]
    authentication: Obj<Auth<'a>>,
    /// v0.3's config inside the task's (and inline in a send).
    #[serde(borrow)]
    push_notification_config: Obj<Box<Shape<'a>>>,
    #[serde(borrow, rename = "push_notification_config")]
    push_notification_config_snake: Obj<Box<Shape<'a>>>,
    /// v1's inline config of a send.
    #[serde(borrow)]
    task_push_notification_config: Obj<Box<Shape<'a>>>,
    #[serde(borrow, rename = "task_push_notification_config")]
    task_push_notification_config_snake: Obj<Box<Shape<'a>>>,
    /// v0.3 HTTP+JSON's body: `parent`, `configId`, `config`.
    #[serde(borrow)]
    config: Obj<Box<Shape<'a>>>,
    #[serde(borrow)]
    parent: Str<'a>,
    #[serde(borrow)]
    config_id: Str<'a>,
    #[serde(borrow)]
    push_notification_config_id: Str<'a>,
    #[serde(borrow, rename = "push_notification_config_id")]
    push_notification_config_id_snake: Str<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Auth<'a> {
    #[serde(borrow)]
    scheme: Str<'a>,
    schemes: List<Str<'a>>,
    #[serde(borrow)]
    credentials: Str<'a>,
}

fn text(s: &Str<'_>) -> Option<String> {
    s.owned().filter(|s| !s.is_empty())
}

/// The first field that holds anything.
fn first(fields: impl IntoIterator<Item = Field>) -> Field {
    fields
        .into_iter()
        .find(|f| *f != Field::Absent)
        .unwrap_or_default()
}

impl Shape<'_> {
    /// The config's own fields, wherever the shape nests them.
    fn inner(&self) -> &Shape<'_> {
        [
            &self.task_push_notification_config,
            &self.task_push_notification_config_snake,
            &self.push_notification_config,
            &self.push_notification_config_snake,
        ]
        .into_iter()
        .find_map(|o| o.0.as_deref())
        .or_else(|| self.config.0.as_deref().map(Shape::inner))
        .unwrap_or(self)
    }

    fn task(&self) -> Field {
        let field = crate::read::field;
        // `parent: "tasks/T"` (v0.3 HTTP+JSON).
        let parent = (self.parent.get())
            .and_then(|p| p.strip_prefix("tasks/"))
            .map_or(Field::Absent, |t| Field::Text(t.to_string()));
        first([field(&self.task_id), field(&self.task_id_snake), parent])
    }
}

impl Config {
    /// A create's params (a v0.3 HTTP+JSON body too), or a send's `configuration` (its inline
    /// config). `None` when they hold no config at all.
    pub fn read(v: &Value) -> Option<Config> {
        let outer = from_object::<Shape<'_>>(v)?;
        let c = outer.inner();
        let field = crate::read::field;
        let auth = c.authentication.0.as_ref();
        let config = Config {
            task_id: first([outer.task(), c.task()]),
            id: first([field(&c.id), field(&outer.config_id)]),
            url: text(&c.url),
            token: text(&c.token),
            scheme: auth
                .and_then(|a| text(&a.scheme).or_else(|| a.schemes.items.iter().find_map(text))),
            credentials: auth.and_then(|a| text(&a.credentials)),
        };
        (config != Config::default()).then_some(config)
    }
}

impl Target {
    /// A get's, list's or delete's params in `d`'s words: v1 names the task `taskId` and the
    /// config `id`; v0.3 the task `id` and the config `pushNotificationConfigId`.
    pub fn read(d: Dialect, v: &Value) -> Target {
        let Some(s) = from_object::<Shape<'_>>(v) else {
            return Target::default();
        };
        let field = crate::read::field;
        match d {
            Dialect::V1 => Target {
                task_id: s.task(),
                id: field(&s.id),
            },
            Dialect::V03 => Target {
                task_id: first([field(&s.id), s.task()]),
                id: first([
                    field(&s.push_notification_config_id),
                    field(&s.push_notification_config_id_snake),
                ]),
            },
        }
    }
}

/// A stored config as a server answers it. Its secrets (the token, the credentials) are never
/// sent back: a config is written once, like a webhook secret elsewhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer<'a> {
    pub task_id: &'a str,
    pub id: &'a str,
    pub url: &'a str,
    pub scheme: Option<&'a str>,
}

/// One config as `w` answers it.
pub fn answer(w: Wire, c: &Answer<'_>) -> Value {
    match w.dialect {
        Dialect::V1 => {
            let mut v = json!({"taskId": c.task_id, "id": c.id, "url": c.url});
            if let Some(s) = c.scheme {
                v["authentication"] = json!({"scheme": s});
            }
            v
        }
        Dialect::V03 => {
            let mut inner = json!({"id": c.id, "url": c.url});
            if let Some(s) = c.scheme {
                inner["authentication"] = json!({"schemes": [s]});
            }
            match w.binding {
                Binding::JsonRpc => json!({"taskId": c.task_id, "pushNotificationConfig": inner}),
                Binding::Rest => json!({
                    "name": format!("tasks/{}/pushNotificationConfigs/{}", c.task_id, c.id),
                    "pushNotificationConfig": inner,
                }),
            }
        }
    }
}

/// A list's answer: v1 wraps the configs (`configs`, `nextPageToken`), v0.3 JSON-RPC answers the
/// array itself, v0.3 HTTP+JSON as `configs`.
pub fn list(w: Wire, configs: &[Answer<'_>]) -> Value {
    let all: Vec<Value> = configs.iter().map(|c| answer(w, c)).collect();
    match (w.dialect, w.binding) {
        (Dialect::V03, Binding::JsonRpc) => Value::Array(all),
        (Dialect::V03, Binding::Rest) => json!({"configs": all}),
        (Dialect::V1, _) => json!({"configs": all, "nextPageToken": ""}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_is_read_in_every_shape() {
        let want = Config {
            task_id: Field::Text("t".into()),
            id: Field::Text("c".into()),
            url: Some("https://h/w".into()),
            token: Some("tok".into()),
            scheme: Some("Bearer".into()),
            credentials: Some("s3".into()),
        };
        let v1 = json!({"task_id": "t", "id": "c", "url": "https://h/w", "token": "tok",
            "authentication": {"scheme": "Bearer", "credentials": "s3"}});
        assert_eq!(Config::read(&v1), Some(want.clone()));
        let v03 = json!({"taskId": "t", "pushNotificationConfig": {"id": "c", "url": "https://h/w",
            "token": "tok", "authentication": {"schemes": ["Bearer"], "credentials": "s3"}}});
        assert_eq!(Config::read(&v03), Some(want.clone()));
        let rest03 = json!({"parent": "tasks/t", "configId": "c", "config": {
            "name": "tasks/t/pushNotificationConfigs/c", "pushNotificationConfig": {
            "url": "https://h/w", "token": "tok",
            "authentication": {"schemes": ["Bearer"], "credentials": "s3"}}}});
        assert_eq!(Config::read(&rest03), Some(want.clone()));
        // Inline in a send's configuration: no task yet.
        let inline = json!({"returnImmediately": true, "taskPushNotificationConfig": {"id": "c",
            "url": "https://h/w", "authentication": {"scheme": "Bearer", "credentials": "s3"}}});
        assert_eq!(
            Config::read(&inline),
            Some(Config {
                task_id: Field::Absent,
                token: None,
                ..want.clone()
            })
        );
        assert_eq!(Config::read(&json!({"blocking": true})), None);
        assert_eq!(Config::read(&json!([1])), None);
        assert_eq!(
            Config::read(&json!({"taskId": 5, "url": 7})).map(|c| (c.task_id, c.url)),
            Some((Field::NotText, None))
        );
    }

    #[test]
    fn a_target_is_named_in_each_dialects_words() {
        let v1 = json!({"task_id": "t", "id": "c"});
        let t = Target::read(Dialect::V1, &v1);
        assert_eq!(
            (t.task_id, t.id),
            (Field::Text("t".into()), Field::Text("c".into()))
        );
        let v03 = json!({"id": "t", "pushNotificationConfigId": "c"});
        let t = Target::read(Dialect::V03, &v03);
        assert_eq!(
            (t.task_id, t.id),
            (Field::Text("t".into()), Field::Text("c".into()))
        );
        assert_eq!(
            Target::read(Dialect::V03, &json!({"id": "t"})).id,
            Field::Absent
        );
    }

    #[test]
    fn an_answer_keeps_the_secrets() {
        let c = Answer {
            task_id: "t",
            id: "c",
            url: "https://h/w",
            scheme: Some("Bearer"),
        };
        assert_eq!(
            answer(Wire::V1_RPC, &c),
            json!({"taskId": "t", "id": "c", "url": "https://h/w",
                "authentication": {"scheme": "Bearer"}})
        );
        assert_eq!(
            list(Wire::V03_RPC, std::slice::from_ref(&c))[0]["pushNotificationConfig"]["authentication"]
                ["schemes"][0],
            "Bearer"
        );
        assert_eq!(
            answer(Wire::V03_REST, &c)["name"],
            "tasks/t/pushNotificationConfigs/c"
        );
        assert_eq!(list(Wire::V1_REST, &[])["configs"], json!([]));
    }
}
