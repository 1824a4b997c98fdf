//! The plugin's files, embedded from the repository root at build time (the single source: the
//! root stays a plugin for `claude --plugin-dir <clone>`). `a2a-mod install` writes them to a
//! folder of its own and registers that folder as the marketplace, because Claude Code copies a
//! directory marketplace's whole tree into its plugin cache: the checkout would drag `target/`
//! (gigabytes) along, and a `cargo install` user has no checkout at all.

/// Path inside the plugin folder, contents, Unix mode.
pub const FILES: &[(&str, &str, u32)] = &[
    (
        ".claude-plugin/plugin.json",
        include_str!("../../.claude-plugin/plugin.json"),
        0o644,
    ),
    (
        ".claude-plugin/marketplace.json",
        include_str!("../../.claude-plugin/marketplace.json"),
        0o644,
    ),
    (".mcp.json", include_str!("../../.mcp.json"), 0o644),
    (
        "hooks/hooks.json",
        include_str!("../../hooks/hooks.json"),
        0o644,
    ),
    (
        "monitors/monitors.json",
        include_str!("../../monitors/monitors.json"),
        0o644,
    ),
    (
        "bin/a2a-mod-launch",
        include_str!("../../bin/a2a-mod-launch"),
        0o755,
    ),
];

/// The hook events the plugin must register, as `a2a-mod hook <arg>` arguments (doctor checks).
pub const HOOK_ARGS: &[&str] = &[
    "session-start",
    "user-prompt-submit",
    "post-tool-use",
    "wake",
    "stop",
];
