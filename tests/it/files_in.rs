//! What Claude sends besides text: `files` (file parts with the bytes, the
//! name and a media type), `data` (a data part) and `contextId` (a new task in an earlier
//! conversation), through the MCP tool over the real binary's stdio and through `a2a-mod send`.
//!
//! The workers are the embedded fake worker and the Python `a2a-sdk` peer (v1 and v0.3-only),
//! run as processes; their `parts` verb answers one JSON line describing every part they
//! received (kind, name, media type, size and sha256 of the bytes, the data), and the context id
//! they put the task in. So every test compares what the worker got with the files on disk.
//!
//! The refusals (outside the project directory, a symlink out of it, a directory, a device or a
//! fifo, over the per-file cap, over the per-send cap, a missing file) are each a one-line tool
//! error naming the rule, and nothing is sent. "Nothing is read before all paths pass" is
//! observed with inotify: a good file listed before a refused one is never opened.

use crate::mcp::{Mcp, structured};
use crate::util::{TempHome, append_config, ok};
use crate::workers::{Kind, Peer};
use serde_json::{Value, json};
use sha2::Digest as _;
use std::path::{Path, PathBuf};

fn sha256(b: &[u8]) -> String {
    sha2::Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

/// The `parts` echo in a result's text: the JSON line that starts with `{"contextId"`.
#[track_caller]
fn echo_of(outcome: &Value) -> Value {
    let text = outcome["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {outcome}"));
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("{\"contextId\""))
        .unwrap_or_else(|| panic!("no parts echo in {text:?}"));
    serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("echo is not JSON ({e}): {line}"))
}

/// The one line of an `isError` result.
#[track_caller]
fn error_line(r: &Value) -> String {
    assert_eq!(r["isError"], true, "{r}");
    let text = r["content"][0]["text"].as_str().unwrap().to_string();
    assert!(!text.contains('\n'), "{text}");
    assert!(text.starts_with("a2a-mod: "), "{text}");
    text
}

/// A project directory with a text file, a PNG and a binary file in a subdirectory.
struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new() -> Project {
        let dir = tempfile::Builder::new()
            .prefix("a2a-mod-proj-")
            .tempdir()
            .unwrap();
        let p = Project { dir };
        p.write("notes.txt", b"line one\nline two\n");
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        png.extend((0..500u32).map(|i| (i * 7 % 251) as u8));
        p.write("shot.png", &png);
        // Every byte value, many times: base64 and any text mangling would show.
        let bin: Vec<u8> = (0..200_000u32).map(|i| (i * 31 % 256) as u8).collect();
        p.write("sub/blob.bin", &bin);
        p
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn file(&self, rel: &str) -> PathBuf {
        self.path().join(rel)
    }

    fn write(&self, rel: &str, bytes: &[u8]) {
        let f = self.file(rel);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, bytes).unwrap();
    }

    fn bytes(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.file(rel)).unwrap()
    }

    fn env(&self) -> [(&'static str, String); 1] {
        [(
            "CLAUDE_PROJECT_DIR",
            self.path().to_str().unwrap().to_string(),
        )]
    }
}

/// Asserts the echo's file part `i` is `rel` of `p`, named `name`, of media type `media`.
#[track_caller]
fn assert_file(echo: &Value, i: usize, p: &Project, rel: &str, name: &str, media: &str) {
    let part = &echo["parts"][i];
    let bytes = p.bytes(rel);
    assert_eq!(part["kind"], "file", "{echo}");
    assert_eq!(part["name"], name, "{echo}");
    assert_eq!(part["mediaType"], media, "{echo}");
    assert_eq!(part["size"], bytes.len(), "{echo}");
    assert_eq!(part["sha256"], sha256(&bytes), "{rel}: {echo}");
}

/// Through the MCP tool: files named relatively and absolutely, and data, arrive as the worker's
/// file and data parts with the same bytes; `contextId` then starts a second task in the same
/// context; the result shows the context id and says how to go on.
async fn mcp_files_data_and_context(kind: Kind) {
    let Some(worker) = Peer::start(kind, &[]) else {
        return;
    };
    let p = Project::new();
    let home = TempHome::with_fake(Some(&worker.url), "");
    let env = p.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut m = Mcp::start(&home, &env).await;
    let abs = p.file("sub/blob.bin");
    let data = json!({"ticket": "A-1", "labels": ["x", "y"], "urgent": true, "nested": {"k": "v"}});
    let r = m
        .call(
            "send",
            json!({"worker": "fake", "message": "parts",
                   "files": ["notes.txt", "./shot.png", abs.to_str().unwrap()],
                   "data": data}),
        )
        .await;
    let s = structured(&r).clone();
    assert_eq!(s["state"], "completed", "{s}");
    let echo = echo_of(&s);
    let parts = echo["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 5, "text, three files, data: {echo}");
    assert_eq!(parts[0]["kind"], "text");
    assert_eq!(parts[0]["sha256"], sha256(b"parts"));
    assert_file(&echo, 1, &p, "notes.txt", "notes.txt", "text/plain");
    assert_file(&echo, 2, &p, "shot.png", "shot.png", "image/png");
    assert_file(
        &echo,
        3,
        &p,
        "sub/blob.bin",
        "blob.bin",
        "application/octet-stream",
    );
    assert_eq!(parts[4]["kind"], "data");
    // A v0.3 worker takes objects only; this one is an object, so it arrives as it is.
    assert_eq!(parts[4]["data"], data, "{echo}");

    // The result shows the context the worker chose, and the note says how to continue it.
    let ctx = s["contextId"]
        .as_str()
        .expect("contextId in the result")
        .to_string();
    assert_eq!(echo["contextId"], ctx.as_str());
    let note = s["note"].as_str().unwrap();
    assert!(note.contains("To go on with this conversation"), "{note}");
    let fenced = format!(
        "task=\"{}\">\n{ctx}\n</worker-output>",
        s["taskId"].as_str().unwrap()
    );
    assert!(
        note.contains(&fenced),
        "the contextId is not fenced: {note}"
    );

    let r = m
        .call(
            "send",
            json!({"worker": "fake", "message": "parts", "contextId": ctx, "data": ["list", "value"]}),
        )
        .await;
    let s2 = structured(&r).clone();
    let echo2 = echo_of(&s2);
    assert_ne!(s2["taskId"], s["taskId"], "a new task");
    assert_eq!(s2["contextId"], ctx.as_str(), "{s2}");
    assert_eq!(
        echo2["contextId"],
        ctx.as_str(),
        "the worker saw the same context"
    );
    let data2 = &echo2["parts"][1];
    assert_eq!(data2["kind"], "data");
    // Not an object: v1 sends it as it is, v0.3 as {"value": …} (docs/commands-and-tools.md).
    let want = match kind {
        Kind::Fake | Kind::PyV1 | Kind::Js | Kind::Adk | Kind::Maf => json!(["list", "value"]),
        Kind::FakeV03 | Kind::PyV03 => json!({"value": ["list", "value"]}),
    };
    assert_eq!(data2["data"], want, "{echo2}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_files_data_and_context_fake() {
    mcp_files_data_and_context(Kind::Fake).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_files_data_and_context_fake_v03() {
    mcp_files_data_and_context(Kind::FakeV03).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_files_data_and_context_python_v1() {
    mcp_files_data_and_context(Kind::PyV1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_files_data_and_context_python_v03() {
    mcp_files_data_and_context(Kind::PyV03).await;
}

/// `a2a-mod send --file --data --context-id`: the same, from the command line, with relative
/// paths starting at the working directory when `CLAUDE_PROJECT_DIR` is unset.
#[test]
fn cli_file_data_and_context_id() {
    let Some(worker) = Peer::start(Kind::Fake, &[]) else {
        return;
    };
    let p = Project::new();
    let home = TempHome::new();
    ok(&home, &["worker", "add", "fake", &worker.url]);
    let send = |extra: &[&str]| -> Value {
        home.command()
            .args(["send", "fake", "parts", "--json"])
            .args(extra)
            .env_remove("CLAUDE_PROJECT_DIR")
            .current_dir(p.path())
            .json()
    };
    let o = send(&[
        "--file",
        "notes.txt",
        "--file",
        "sub/blob.bin",
        "--data",
        r#"{"a":"b"}"#,
    ]);
    let echo = echo_of(&o);
    assert_file(&echo, 1, &p, "notes.txt", "notes.txt", "text/plain");
    assert_file(
        &echo,
        2,
        &p,
        "sub/blob.bin",
        "blob.bin",
        "application/octet-stream",
    );
    assert_eq!(
        echo["parts"][3],
        json!({"kind": "data", "data": {"a": "b"}})
    );
    let ctx = o["contextId"].as_str().unwrap().to_string();
    let o2 = send(&["--context-id", &ctx]);
    assert_eq!(echo_of(&o2)["contextId"], ctx.as_str());
    assert_ne!(o2["taskId"], o["taskId"]);

    // Bad JSON is refused before anything is sent; so is a file outside the project.
    let sends = worker.events().iter().filter(|e| e.is_send()).count();
    let e = home
        .command()
        .args(["send", "fake", "parts", "--data", "{nope"])
        .fails();
    assert!(e.contains("--data is not JSON"), "{e}");
    let e = home
        .command()
        .args(["send", "fake", "parts", "--file", "/etc/passwd"])
        .env_remove("CLAUDE_PROJECT_DIR")
        .current_dir(p.path())
        .fails();
    assert!(e.contains("is outside the project directory"), "{e}");
    assert_eq!(
        worker.events().iter().filter(|e| e.is_send()).count(),
        sends
    );
}

fn mkfifo(p: &Path) {
    a2a_mod_os::testing::mkfifo(p).expect("mkfifo");
}

/// Each rule refuses with a one-line tool error naming it, and no send reaches the worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_refusals_name_their_rule() {
    let Some(worker) = Peer::start(Kind::Fake, &[]) else {
        return;
    };
    let p = Project::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), b"not yours").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), p.file("link.txt")).unwrap();
    std::os::unix::fs::symlink(outside.path(), p.file("linkdir")).unwrap();
    mkfifo(&p.file("pipe"));
    // Caps in bytes: 10240 per file, 15360 per send.
    p.write("big.bin", &vec![1u8; 10_241]);
    p.write("m1.bin", &vec![2u8; 9_000]);
    p.write("m2.bin", &vec![3u8; 9_000]);
    let home = TempHome::with_fake(Some(&worker.url), "");
    // The home is allowed too, so its state folder and config file are refused by the private
    // rule alone.
    append_config(
        &home.a2a_home(),
        &format!(
            "[files]\nmax_file_mib = 0.009765625\nmax_send_mib = 0.0146484375\nallow_dirs = [\"/dev\", \"/proc/self\", {:?}]\n",
            home.a2a_home().display().to_string()
        ),
    );
    std::fs::create_dir_all(home.a2a_home().join("state")).unwrap();
    std::fs::write(home.a2a_home().join("state/saved.txt"), b"not yours").unwrap();
    let state_file = home.a2a_home().join("state/saved.txt");
    let config_file = home.a2a_home().join("config.toml");
    let env = p.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut m = Mcp::start(&home, &env).await;
    let secret = outside.path().join("secret.txt");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![secret.to_str().unwrap()],
            "is outside the project directory",
        ),
        (
            vec!["../x/../../../../../../../etc/passwd"],
            "is outside the project directory",
        ),
        (vec!["link.txt"], "is a symlink to"),
        (vec!["linkdir/secret.txt"], "is a symlink to"),
        (vec!["sub"], "is a directory"),
        (vec!["pipe"], "is not a regular file"),
        // Allowed by allow_dirs, still not a file.
        (vec!["/dev/zero"], "is not a regular file"),
        // Allowed by allow_dirs, a regular file of size 0 holding a2a-mod's own environment.
        (vec!["/proc/self/environ"], "is on /proc, /sys or /dev"),
        (vec!["big.bin"], "over the per-file cap of 10.0 KiB"),
        (
            vec!["m1.bin", "m2.bin"],
            "over the per-send cap of 15.0 KiB",
        ),
        (vec!["missing.txt"], "cannot find it"),
        (vec![""], "the path is empty"),
        (
            vec![state_file.to_str().unwrap()],
            "is a2a-mod's own state or config",
        ),
        (
            vec![config_file.to_str().unwrap()],
            "is a2a-mod's own state or config",
        ),
    ];
    for (files, rule) in cases {
        let r = m
            .call(
                "send",
                json!({"worker": "fake", "message": "parts", "files": files}),
            )
            .await;
        let line = error_line(&r);
        assert!(line.contains(rule), "{files:?}: want {rule:?} in {line}");
        assert!(line.contains("nothing was sent"), "{line}");
        assert!(
            !line.contains("not yours"),
            "file contents in an error: {line}"
        );
    }
    // The rule that refused a symlink names where it leads.
    let r = m
        .call(
            "send",
            json!({"worker": "fake", "message": "parts", "files": ["link.txt"]}),
        )
        .await;
    assert!(error_line(&r).contains("secret.txt"), "{r}");
    assert!(
        !worker.events().iter().any(|e| e.is_send()),
        "a refused send reached the worker: {:?}",
        worker.events()
    );

    // Nothing is read before all paths pass: the good file first, a refused one after, and the
    // good file is never opened. Then, as the control, a send of it alone opens it.
    // Counts opens of the file by any process: how the test sees that a refused send read nothing.
    let opens = a2a_mod_os::testing::OpenWatch::new(&p.file("notes.txt")).expect("inotify");
    let r = m
        .call(
            "send",
            json!({"worker": "fake", "message": "parts", "files": ["notes.txt", "sub"]}),
        )
        .await;
    assert!(error_line(&r).contains("is a directory"), "{r}");
    assert_eq!(
        opens.take(),
        0,
        "the good file was opened before the refusal"
    );
    let r = m
        .call(
            "send",
            json!({"worker": "fake", "message": "parts", "files": ["notes.txt"]}),
        )
        .await;
    assert_file(
        &echo_of(structured(&r)),
        1,
        &p,
        "notes.txt",
        "notes.txt",
        "text/plain",
    );
    assert!(opens.take() >= 1, "the control send did not open the file");

    // A contextId that cannot be a worker's id, or that contradicts the answered task's.
    let r = m
        .call(
            "send",
            json!({"worker": "fake", "message": "hi", "contextId": "a b"}),
        )
        .await;
    assert!(error_line(&r).contains("contextId"), "{r}");
}

/// The `workers` tool shows each skill's input and output media types (the card's defaults when
/// a skill names none), so Claude knows what a worker takes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_workers_show_skill_modes() {
    let Some(worker) = Peer::start(Kind::Fake, &[]) else {
        return;
    };
    let home = TempHome::with_fake(Some(&worker.url), "");
    let mut m = Mcp::start(&home, &[]).await;
    let r = m.call("workers", json!({})).await;
    let w = &structured(&r)["workers"][0];
    let echo = w["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "echo")
        .unwrap_or_else(|| panic!("{w}"));
    assert_eq!(
        echo["inputModes"],
        json!(["text/plain", "application/json", "application/octet-stream"])
    );
    assert_eq!(echo["outputModes"], json!(["text/plain"]));
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("takes text/plain, application/json"),
        "{text}"
    );
}
