//! A run that asks: Claude Code's permission prompts and its own questions (AskUserQuestion),
//! as serve hosts them over the stream-json control channel (`--permission-prompt-tool stdio`,
//! docs/serve.md), turned into one line for the client and read back from its reply. Pure: the
//! executor (`claude.rs`) reads the requests and writes the responses; the engine carries the
//! question to the client as `input-required` and the reply back.

use crate::task::Grants;
use serde_json::{Value, json};

/// The most a question holds, in characters: it is a task's status message, shown on one line.
pub const QUESTION_CHARS: usize = 1000;

/// The extension serve's questions declare (the card's `capabilities.extensions`, each asking
/// message's `extensions`): a data part beside the status line that says what is asked. Its
/// shape follows the `ToolCall` and `ConfirmationRequest` of Gemini CLI's A2A
/// `development-tool` extension (docs/serve.md "What a question carries").
pub const EXTENSION: &str = a2a_mod_core::task::TOOL_CONFIRMATION_EXTENSION;

/// The most of a tool's input a question carries, in characters of its JSON.
pub const INPUT_CHARS: usize = 8000;

/// What the CLI asked (a `control_request` of subtype `can_use_tool`).
#[derive(Debug, Clone, PartialEq)]
pub struct Asked {
    /// The control request's id, echoed in the response.
    pub request_id: String,
    pub tool: String,
    pub input: Value,
    /// The CLI's own "don't ask again" rules (`permission_suggestions` of kind `addRules`).
    pub rules: Vec<String>,
    /// The folders it suggests adding (`addDirectories`): where the tool would write.
    pub dirs: Vec<String>,
    /// The file the CLI would not let the tool write without asking (`blocked_path`).
    pub blocked_path: Option<String>,
}

impl Asked {
    /// Reads a `can_use_tool` request; `None` for any other line.
    pub fn read(v: &Value) -> Option<Asked> {
        if v.get("type").and_then(Value::as_str) != Some("control_request") {
            return None;
        }
        let r = &v["request"];
        if r.get("subtype").and_then(Value::as_str) != Some("can_use_tool") {
            return None;
        }
        let rules = r["permission_suggestions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| s["type"] == "addRules" && s["behavior"] == "allow")
            .flat_map(|s| s["rules"].as_array().into_iter().flatten())
            .filter_map(|rule| {
                let tool = rule["toolName"].as_str()?;
                Some(match rule["ruleContent"].as_str() {
                    Some(c) => format!("{tool}({c})"),
                    None => tool.to_string(),
                })
            })
            .collect();
        let dirs = r["permission_suggestions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| s["type"] == "addDirectories")
            .flat_map(|s| s["directories"].as_array().into_iter().flatten())
            .filter_map(Value::as_str)
            // Only absolute paths, as the CLI names them; anything else is no folder to add.
            .filter(|d| d.starts_with('/') && !d.chars().any(char::is_control))
            .map(str::to_string)
            .collect();
        Some(Asked {
            request_id: v["request_id"].as_str()?.to_string(),
            tool: r["tool_name"].as_str().unwrap_or("a tool").to_string(),
            input: r.get("input").cloned().unwrap_or(Value::Null),
            rules,
            dirs,
            blocked_path: r["blocked_path"].as_str().map(str::to_string),
        })
    }

    /// Whether the client already allowed this for good, though the CLI asks again: Claude Code
    /// checks a command's writes apart from its rules, so a command that writes through a
    /// redirection is asked again after "allow always" (and `--allowedTools`/`--add-dir` do
    /// not cover it). Granted only when both halves were allowed: a rule of the grant matches
    /// the command (a simple one: no `;`, `&`, `|`, substitution or input redirection, so a
    /// rule like `Bash(echo x *)` cannot carry a second command), and the file it writes lies
    /// in a folder of the grant.
    pub fn granted_by(&self, g: &Grants) -> bool {
        if self.is_question() || self.tool != "Bash" {
            return false;
        }
        let Some(command) = self.input["command"].as_str() else {
            return false;
        };
        let simple = !command.chars().any(|c| {
            matches!(
                c,
                ';' | '&' | '|' | '`' | '$' | '(' | ')' | '<' | '\n' | '\r'
            )
        });
        let ruled = g.rules.iter().any(|r| match r.strip_prefix("Bash(") {
            Some(content) => content
                .strip_suffix(')')
                .is_some_and(|pattern| matches_rule(pattern, command)),
            None => r == "Bash",
        });
        let inside = match &self.blocked_path {
            None => true,
            Some(p) => {
                let path = std::path::Path::new(p);
                let plain = path.is_absolute()
                    && !path
                        .components()
                        .any(|c| matches!(c, std::path::Component::ParentDir));
                plain && g.dirs.iter().any(|d| path.starts_with(d))
            }
        };
        simple && ruled && inside
    }

    /// Claude's own question to a user, rather than a permission to give.
    pub fn is_question(&self) -> bool {
        self.tool == "AskUserQuestion"
    }

    /// The line the client reads as the task's status message.
    pub fn question(&self) -> String {
        let line = if self.is_question() {
            let qs = self.questions();
            let each: Vec<String> = qs
                .iter()
                .enumerate()
                .map(|(i, q)| {
                    let opts: Vec<&str> = q["options"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|o| o["label"].as_str())
                        .collect();
                    let n = if qs.len() > 1 {
                        format!("{}) ", i + 1)
                    } else {
                        String::new()
                    };
                    let text = q["question"].as_str().unwrap_or("?");
                    if opts.is_empty() {
                        format!("{n}{text}")
                    } else {
                        format!("{n}{text} ({})", opts.join(" / "))
                    }
                })
                .collect();
            let how = if qs.len() > 1 {
                "Reply with one answer per line, in order"
            } else {
                "Reply with your answer"
            };
            format!("Claude asks: {}. {how}", each.join(" "))
        } else {
            a2a_mod_core::status::approval_line(
                &self.tool,
                &crate::task::step_line(&self.tool, &self.input),
            )
        };
        a2a_mod_core::text::one_line(&line, QUESTION_CHARS)
    }

    /// The question structured, for clients that show it as a form rather than a line: a
    /// permission as a `toolCall` (the tool, its input cleaned and bounded, what it would run,
    /// the answers, Claude Code's suggested rule and folders), Claude's question as `question`
    /// (each with its options).
    pub fn data(&self) -> Value {
        if self.is_question() {
            let qs: Vec<Value> = self
                .questions()
                .iter()
                .map(|q| {
                    let clean = |k: &str| q[k].as_str().map(|s| one(s, 500));
                    let options: Vec<Value> = q["options"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|o| {
                            json!({"label": o["label"].as_str().map(|s| one(s, 200)),
                                "description": o["description"].as_str().map(|s| one(s, 500))})
                        })
                        .collect();
                    json!({"question": clean("question"), "header": clean("header"),
                        "multiSelect": q["multiSelect"].as_bool().unwrap_or(false), "options": options})
                })
                .collect();
            return json!({"question": {"questions": qs,
                "answer": "reply with text: one answer per question, one per line; an option's number picks it"}});
        }
        let grants = self.always();
        let details = match self.input["command"].as_str() {
            Some(c) if self.tool == "Bash" => {
                json!({"executeDetails": {"command": a2a_mod_core::text::sanitize_lines(c)}})
            }
            _ => {
                json!({"genericDetails": {"description": crate::task::step_line(&self.tool, &self.input)}})
            }
        };
        let mut request = json!({"options": [
            {"id": "proceed_once", "name": "Allow", "reply": "allow"},
            {"id": "proceed_always", "name": "Allow always",
             "description": "allowed for the rest of this conversation", "reply": "allow always"},
            {"id": "cancel", "name": "Deny", "description": "a reason after it reaches Claude",
             "reply": "deny <reason>"}]});
        if let (Some(r), Some(d)) = (request.as_object_mut(), details.as_object()) {
            r.extend(d.clone());
        }
        json!({"toolCall": {
            "toolCallId": self.request_id,
            "status": "PENDING",
            "toolName": one(&self.tool, 200),
            "inputParameters": bounded(&self.input),
            "confirmationRequest": request,
            "suggestedRules": grants.rules.iter().map(|r| one(r, 500)).collect::<Vec<_>>(),
            "suggestedDirectories": grants.dirs.iter().map(|d| one(d, 500)).collect::<Vec<_>>(),
        }})
    }

    fn questions(&self) -> Vec<Value> {
        self.input["questions"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// What "allow always" grants: the CLI's own rule suggestion (else the exact command for
    /// Bash, else the tool), and the folders it suggests adding, so the same shape is not asked
    /// again (a redirection into a file is a write the folder must allow).
    pub fn always(&self) -> Grants {
        let rules = if self.rules.is_empty() {
            match self.input["command"].as_str() {
                Some(c) if self.tool == "Bash" => vec![format!("Bash({c})")],
                _ => vec![self.tool.clone()],
            }
        } else {
            self.rules.clone()
        };
        Grants {
            rules,
            dirs: self.dirs.clone(),
        }
    }

    /// The control response for the client's reply, and what to keep for the context
    /// (something only for "allow always").
    pub fn answer(&self, reply: &str) -> (Value, Grants) {
        if self.is_question() {
            return (self.respond(self.answers(reply), None), Grants::default());
        }
        match verdict(reply) {
            Verdict::Allow => (self.respond(self.input.clone(), None), Grants::default()),
            Verdict::AllowAlways => {
                let grants = self.always();
                (self.respond(self.input.clone(), Some(&grants)), grants)
            }
            Verdict::Deny(why) => (self.deny(&why), Grants::default()),
        }
    }

    /// The response when nobody answered in time: a denial that says so.
    pub fn timed_out(&self, secs: u64) -> Value {
        if self.is_question() {
            self.deny(&format!(
                "Nobody answered within {secs} s; go on with your own best judgement, and say what you assumed."
            ))
        } else {
            self.deny(&format!(
                "Nobody answered the permission request within {secs} s, so it was not allowed; do without it, or say in your answer what you need."
            ))
        }
    }

    fn answers(&self, reply: &str) -> Value {
        let qs = self.questions();
        let lines: Vec<&str> = reply
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let mut answers = serde_json::Map::new();
        for (i, q) in qs.iter().enumerate() {
            // One line per question when there are as many; else the whole reply for each.
            let said = if lines.len() == qs.len() && qs.len() > 1 {
                lines[i]
            } else {
                reply.trim()
            };
            let said = said.strip_prefix(&format!("{}) ", i + 1)).unwrap_or(said);
            // A number picks that option's label.
            let label = said
                .parse::<usize>()
                .ok()
                .and_then(|n| n.checked_sub(1))
                .and_then(|n| q["options"].get(n))
                .and_then(|o| o["label"].as_str())
                .unwrap_or(said);
            if let Some(text) = q["question"].as_str() {
                answers.insert(text.to_string(), label.into());
            }
        }
        json!({"questions": qs, "answers": answers})
    }

    fn respond(&self, input: Value, always: Option<&Grants>) -> Value {
        let mut r = json!({"behavior": "allow", "updatedInput": input});
        if let Some(g) = always {
            // For this run at once; the engine hands them to the context's later runs. Never
            // Claude Code's own settings files: the agent's folder is the user's, not the
            // client's.
            let rules: Vec<Value> = g.rules.iter().map(|r| rule_json(r)).collect();
            let mut updates = vec![json!({"type": "addRules", "rules": rules,
                "behavior": "allow", "destination": "session"})];
            if !g.dirs.is_empty() {
                updates.push(json!({"type": "addDirectories", "directories": g.dirs,
                    "destination": "session"}));
            }
            r["updatedPermissions"] = Value::Array(updates);
        }
        self.success(r)
    }

    fn deny(&self, message: &str) -> Value {
        self.success(json!({"behavior": "deny", "message": message}))
    }

    fn success(&self, response: Value) -> Value {
        json!({"type": "control_response", "response": {"subtype": "success",
            "request_id": self.request_id, "response": response}})
    }
}

/// The answer to a control request serve does not host (anything but `can_use_tool`), so the
/// run is not left waiting for it.
pub fn unsupported(v: &Value) -> Option<Value> {
    if v.get("type").and_then(Value::as_str) != Some("control_request") {
        return None;
    }
    let subtype = v["request"]["subtype"].as_str().unwrap_or("?");
    Some(
        json!({"type": "control_response", "response": {"subtype": "error",
        "request_id": v["request_id"], "error": format!("a2a-mod serve does not host {subtype}")}}),
    )
}

/// A worker's string for one field: cleaned, cut.
fn one(s: &str, cols: usize) -> String {
    a2a_mod_core::text::one_line(s, cols)
}

/// A tool's input for a client to show: every string cleaned of control sequences (line breaks
/// kept), and the whole at most [`INPUT_CHARS`] of JSON (past that, its cleaned JSON cut, as
/// `{"truncated": …}`).
fn bounded(input: &Value) -> Value {
    fn clean(v: &Value) -> Value {
        match v {
            Value::String(s) => Value::String(a2a_mod_core::text::sanitize_lines(s)),
            Value::Array(a) => Value::Array(a.iter().map(clean).collect()),
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, v)| (a2a_mod_core::text::one_line(k, 200), clean(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    let cleaned = clean(input);
    let text = cleaned.to_string();
    if text.chars().count() <= INPUT_CHARS {
        cleaned
    } else {
        json!({"truncated": text.chars().take(INPUT_CHARS).collect::<String>()})
    }
}

/// Whether a Bash rule's content matches `command`: `*` stands for any run of characters, and
/// the older `prefix:*` for any command starting with the prefix.
fn matches_rule(pattern: &str, command: &str) -> bool {
    if let Some(prefix) = pattern.strip_suffix(":*") {
        return command == prefix || command.starts_with(&format!("{prefix} "));
    }
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = command.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

/// `Tool(content)` or `Tool` as the CLI's rule value.
fn rule_json(rule: &str) -> Value {
    match rule.split_once('(') {
        Some((tool, rest)) if rest.ends_with(')') => {
            json!({"toolName": tool, "ruleContent": &rest[..rest.len() - 1]})
        }
        _ => json!({"toolName": rule}),
    }
}

/// What a reply to a permission prompt says.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Allow,
    AllowAlways,
    /// Not allowed, with the words Claude gets.
    Deny(String),
}

/// Reads a reply: `allow` / `yes`, `allow always` / `always`, `deny` / `no` with an optional
/// reason after it. Anything else is no permission, the reply itself the reason Claude reads:
/// a caller who writes "use cargo check instead" has not said yes.
pub fn verdict(reply: &str) -> Verdict {
    let r = reply.trim();
    let lower = r.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | '.' | ':' | ';' | '!' | '-'))
        .filter(|w| !w.is_empty())
        .collect();
    match words.as_slice() {
        ["allow" | "yes" | "y" | "ok" | "approve", "always", ..]
        | ["always", "allow" | "yes", ..]
        | ["always"] => Verdict::AllowAlways,
        ["allow" | "yes" | "y" | "ok" | "approve"] | ["allow", "once"] => Verdict::Allow,
        ["deny" | "no" | "n" | "reject", ..] => {
            // The reason: what follows the first word, as the caller wrote it.
            let first = r
                .find(|c: char| c.is_whitespace() || matches!(c, ',' | '.' | ':' | ';' | '!' | '-'))
                .unwrap_or(r.len());
            let why = r[first..]
                .trim_start_matches(|c: char| {
                    c.is_whitespace() || matches!(c, ',' | '.' | ':' | ';' | '!' | '-')
                })
                .trim();
            Verdict::Deny(if why.is_empty() {
                "The caller did not allow this.".to_string()
            } else {
                format!("The caller did not allow this: {why}")
            })
        }
        _ => Verdict::Deny(format!("The caller did not allow this and said: {r}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bash_request() -> Value {
        json!({"type": "control_request", "request_id": "r1", "request": {"subtype": "can_use_tool",
            "tool_name": "Bash", "input": {"command": "rm -rf build", "description": "clean"},
            "permission_suggestions": [
                {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "rm -rf build"}],
                 "behavior": "allow", "destination": "localSettings"},
                {"type": "setMode", "mode": "acceptEdits", "destination": "session"}]}})
    }

    #[test]
    fn a_permission_prompt_is_one_line_and_its_reply_an_answer() {
        let a = Asked::read(&bash_request()).unwrap();
        assert_eq!(
            a.question(),
            "Claude wants to run Bash: rm -rf build. Reply allow, allow always, or deny (with a reason)"
        );
        let (allow, keep) = a.answer("Allow");
        assert_eq!(allow["response"]["request_id"], "r1");
        assert_eq!(allow["response"]["response"]["behavior"], "allow");
        assert_eq!(
            allow["response"]["response"]["updatedInput"]["command"],
            "rm -rf build"
        );
        assert!(keep.is_empty());
        let (always, keep) = a.answer("allow always");
        assert_eq!(keep.rules, ["Bash(rm -rf build)"]);
        assert_eq!(
            always["response"]["response"]["updatedPermissions"],
            json!([{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "rm -rf build"}],
                "behavior": "allow", "destination": "session"}])
        );
        let (deny, _) = a.answer("deny: the build dir is shared");
        assert_eq!(
            deny["response"]["response"],
            json!({"behavior": "deny", "message": "The caller did not allow this: the build dir is shared"})
        );
    }

    /// Claude Code 2.1.332's request for a command that writes through a redirection (as a real
    /// run sent it): "allow always" keeps its folder suggestion too, or the same shape is asked
    /// again in the run and in every later one.
    #[test]
    fn allow_always_keeps_the_folder_a_redirection_writes_to() {
        let v = json!({"type": "control_request", "request_id": "r9", "request": {"subtype": "can_use_tool",
            "tool_name": "Bash", "input": {"command": "echo x >> notes.txt", "description": "note"},
            "permission_suggestions": [
                {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "echo x *"}],
                 "behavior": "allow", "destination": "localSettings"},
                {"type": "addDirectories", "directories": ["/srv/app", "relative/no"], "destination": "session"}],
            "blocked_path": "/srv/app/notes.txt"}});
        let a = Asked::read(&v).unwrap();
        let (r, keep) = a.answer("allow always");
        assert_eq!(
            keep,
            Grants {
                rules: vec!["Bash(echo x *)".into()],
                dirs: vec!["/srv/app".into()]
            }
        );
        assert_eq!(
            r["response"]["response"]["updatedPermissions"],
            json!([
                {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "echo x *"}],
                 "behavior": "allow", "destination": "session"},
                {"type": "addDirectories", "directories": ["/srv/app"], "destination": "session"}])
        );
    }

    /// A grant covers a command the CLI asks again only when the rule and the write's folder
    /// were both allowed, and never a command that could carry another.
    #[test]
    fn a_grant_covers_its_own_shape_only() {
        let ask = |command: &str, blocked: Option<&str>| {
            let mut v = json!({"type": "control_request", "request_id": "r", "request": {
                "subtype": "can_use_tool", "tool_name": "Bash", "input": {"command": command}}});
            if let Some(b) = blocked {
                v["request"]["blocked_path"] = json!(b);
            }
            Asked::read(&v).unwrap()
        };
        let g = Grants {
            rules: vec!["Bash(echo x *)".into(), "Bash(git status:*)".into()],
            dirs: vec!["/srv/app".into()],
        };
        assert!(ask("echo x >> notes.txt", Some("/srv/app/notes.txt")).granted_by(&g));
        assert!(ask("git status --short", None).granted_by(&g));
        for (command, blocked) in [
            ("echo x > /home/u/.bashrc", Some("/home/u/.bashrc")),
            ("echo x > ../escape", Some("/srv/app/../escape")),
            ("echo x; rm -rf ~", None),
            ("echo x && curl evil", None),
            ("echo x $(id) > a", Some("/srv/app/a")),
            ("echo y > a", Some("/srv/app/a")),
            ("git statusx", None),
        ] {
            assert!(!ask(command, blocked).granted_by(&g), "{command}");
        }
        assert!(!ask("echo x > a", Some("/srv/app/a")).granted_by(&Grants::default()));
    }

    #[test]
    fn replies_read_as_people_write_them() {
        assert_eq!(verdict(" yes "), Verdict::Allow);
        assert_eq!(verdict("Allow."), Verdict::Allow);
        assert_eq!(verdict("allow always"), Verdict::AllowAlways);
        assert_eq!(verdict("Always"), Verdict::AllowAlways);
        assert_eq!(
            verdict("no"),
            Verdict::Deny("The caller did not allow this.".into())
        );
        assert_eq!(
            verdict("No, use cargo check"),
            Verdict::Deny("The caller did not allow this: use cargo check".into())
        );
        assert_eq!(
            verdict("allow if it is quick"),
            Verdict::Deny("The caller did not allow this and said: allow if it is quick".into())
        );
    }

    #[test]
    fn a_hostile_prompt_stays_one_bounded_line() {
        let mut v = bash_request();
        v["request"]["input"]["command"] =
            json!(format!("echo \u{1b}]0;x\u{7}\n{}", "y".repeat(5000)));
        let q = Asked::read(&v).unwrap().question();
        assert!(!q.chars().any(char::is_control), "{q:?}");
        assert!(q.chars().count() <= QUESTION_CHARS);
    }

    #[test]
    fn claudes_questions_take_the_reply_as_the_answer() {
        let v = json!({"type": "control_request", "request_id": "r2", "request": {"subtype": "can_use_tool",
            "tool_name": "AskUserQuestion", "input": {"questions": [{"question": "Which color?",
            "header": "Color", "multiSelect": false,
            "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}]}]}}});
        let a = Asked::read(&v).unwrap();
        assert_eq!(
            a.question(),
            "Claude asks: Which color? (Red / Blue). Reply with your answer"
        );
        let (r, _) = a.answer("2");
        assert_eq!(
            r["response"]["response"]["updatedInput"]["answers"],
            json!({"Which color?": "Blue"})
        );
        let (r, _) = a.answer("green, really");
        assert_eq!(
            r["response"]["response"]["updatedInput"]["answers"]["Which color?"],
            "green, really"
        );
        assert_eq!(a.timed_out(5)["response"]["response"]["behavior"], "deny");
    }

    #[test]
    fn other_control_requests_get_an_error_not_silence() {
        let v = json!({"type": "control_request", "request_id": "r3", "request": {"subtype": "hook_callback"}});
        assert!(Asked::read(&v).is_none());
        assert_eq!(unsupported(&v).unwrap()["response"]["subtype"], "error");
        assert!(unsupported(&json!({"type": "assistant"})).is_none());
    }
}
