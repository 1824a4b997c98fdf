//! The plugin's files, embedded from the repository root at build time (the single source: the
//! root stays a plugin for `claude --plugin-dir <clone>`, and `scripts/package-npm` ships the same
//! files in the npm package). `a2a-mod install` writes them to a folder of its own and registers
//! that folder as the marketplace, because Claude Code copies a directory marketplace's whole tree
//! into its plugin cache: the checkout would drag `target/` (gigabytes) along, and a `cargo
//! install` user has no checkout at all.
//!
//! The one file that differs is the marketplace: the repository's names the npm package (Claude
//! Code installs it with its binary, in one step), the one `install` writes names the folder
//! itself, whose binary is already there.

use std::path::Path;

/// Path inside the plugin folder, contents, Unix mode.
pub const FILES: &[(&str, &str, u32)] = &[
    (
        ".claude-plugin/plugin.json",
        include_str!("../../../.claude-plugin/plugin.json"),
        0o644,
    ),
    (".claude-plugin/marketplace.json", MARKETPLACE, 0o644),
    (".mcp.json", include_str!("../../../.mcp.json"), 0o644),
    (
        "hooks/hooks.json",
        include_str!("../../../hooks/hooks.json"),
        0o644,
    ),
    (
        "monitors/monitors.json",
        include_str!("../../../monitors/monitors.json"),
        0o644,
    ),
    (
        "bin/a2a-mod-launch",
        include_str!("../../../bin/a2a-mod-launch"),
        0o755,
    ),
];

/// The marketplace `install` registers: the plugin in the same folder.
const MARKETPLACE: &str = r#"{
  "name": "a2a-mod",
  "owner": { "name": "a2a-mod" },
  "plugins": [
    {
      "name": "a2a-mod",
      "source": "./",
      "description": "Delegate work to remote A2A agents and be woken when it ends"
    }
  ]
}
"#;

/// The hook events the plugin must register, as `a2a-mod hook <arg>` arguments (doctor checks).
pub const HOOK_ARGS: &[&str] = &["session-start", "user-prompt-submit", "post-tool-use"];

/// The wake-up hooks next to the monitor: the asyncRewake waiter and the headless Stop hook.
pub const WAKE_HOOK_ARGS: &[&str] = &["wake", "stop"];

/// How the shipped files start a2a-mod: through the launcher, which searches for the binary.
pub const LAUNCHER: &str = "${CLAUDE_PLUGIN_ROOT}/bin/a2a-mod-launch";

/// [`FILES`] as `install` writes them: the hooks, the monitor and the MCP server name `exe`
/// directly instead of the launcher. Hooks run on every tool call and turn end of every session,
/// and the launcher's `sh` plus its search cost several times the binary's own start;
/// install knows the path, so only a `--plugin-dir` checkout needs the
/// search. A moved binary is rewritten by the next `install` (doctor says so).
pub fn installed_files(exe: &str) -> Vec<(&'static str, String, u32)> {
    FILES
        .iter()
        .map(|(rel, text, mode)| {
            let text = match *rel {
                "hooks/hooks.json" | "monitors/monitors.json" => {
                    // Shell command lines: the path quoted for `sh`, then JSON-escaped.
                    let quoted = json_escape(&shell_quote(exe));
                    text.replace(LAUNCHER, &quoted)
                }
                // An argv[0], not a shell line.
                ".mcp.json" => text.replace(LAUNCHER, &json_escape(exe)),
                _ => (*text).to_owned(),
            };
            (*rel, text, *mode)
        })
        .collect()
}

/// Whether `exe` lies in Claude Code's plugin cache (`<config>/plugins/cache/<marketplace>/<plugin>/
/// <version>/`), where the plugin installed from npm keeps its platform package's binary.
pub fn in_plugin_cache(exe: &Path) -> bool {
    let parts: Vec<_> = exe.components().map(|c| c.as_os_str()).collect();
    parts
        .windows(2)
        .any(|w| w[0] == "plugins" && w[1] == "cache")
}

/// `s` as one `sh` word: unchanged when it is only plain path characters, else single-quoted.
pub fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@%".contains(c));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The inside of a JSON string literal for `s`.
fn json_escape(s: &str) -> String {
    let lit = serde_json::Value::String(s.to_owned()).to_string();
    lit[1..lit.len() - 1].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installed_files_name_the_binary_and_stay_valid_json() {
        for exe in [
            "/usr/local/bin/a2a-mod",
            "/home/me/my tools/it's \"a2a-mod\"",
        ] {
            for (rel, text, _) in installed_files(exe) {
                assert!(
                    !text.contains(LAUNCHER) || rel == "bin/a2a-mod-launch",
                    "{rel}"
                );
                if rel.ends_with(".json") {
                    let v: serde_json::Value = serde_json::from_str(&text).expect(rel);
                    if rel == ".mcp.json" {
                        assert_eq!(v["mcpServers"]["a2a"]["command"], exe);
                    }
                    if rel == "hooks/hooks.json" {
                        let stop = &v["hooks"]["Stop"][0]["hooks"][0]["command"];
                        assert_eq!(
                            stop.as_str().unwrap(),
                            format!("{} hook stop", shell_quote(exe))
                        );
                    }
                }
            }
        }
        assert_eq!(shell_quote("/a b/it's"), r"'/a b/it'\''s'");
    }

    /// The repository's marketplace and the one `install` writes offer the same plugin, under the
    /// name the tool names and permission rule carry; one from npm, one from its own folder.
    #[test]
    fn both_marketplaces_offer_the_plugin_by_its_name() {
        let read = |t: &str| -> serde_json::Value { serde_json::from_str(t).unwrap() };
        let manifest = read(include_str!("../../../.claude-plugin/plugin.json"));
        let repo = read(include_str!("../../../.claude-plugin/marketplace.json"));
        let own = read(MARKETPLACE);
        for m in [&repo, &own] {
            assert_eq!(m["name"], "a2a-mod");
            assert_eq!(m["plugins"][0]["name"], manifest["name"]);
        }
        assert_eq!(
            repo["plugins"][0]["source"],
            serde_json::json!({"source": "npm", "package": "a2a-mod"})
        );
        assert_eq!(own["plugins"][0]["source"], "./");
    }

    #[test]
    fn the_plugin_cache_is_told_by_its_folders() {
        for (p, cached) in [
            (
                "/home/u/.claude/plugins/cache/a2a-mod/a2a-mod/0.1.0/node_modules/a2a-mod-linux-x64/bin/a2a-mod",
                true,
            ),
            ("/home/u/.local/bin/a2a-mod", false),
            ("/opt/plugins-cache/a2a-mod", false),
        ] {
            assert_eq!(in_plugin_cache(Path::new(p)), cached, "{p}");
        }
    }
}
