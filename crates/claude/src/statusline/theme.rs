//! Status-line themes: the built-ins embedded from `themes/*.toml`, parsing a theme file into a
//! [`Theme`] (the pure types live in [`a2a_mod_core::theme`], re-exported here), and a tolerant
//! [`load`] that falls back to `default` with one warning instead of breaking the line.
//!
//! Hot path (the status line, every second): only the chosen theme is parsed, from an embedded
//! `&'static str`; a user theme (`<config dir>/themes/<name>.toml`) costs one file read, and only
//! when the name is not a built-in. Parsing is pure; [`load`] is the one function here that reads
//! a file.

pub use a2a_mod_core::theme::{Colour, ColourError, Glyphs, Powerline, Style, Styles, Theme};
// Parse errors are only ever shown (as `load`'s warning): `anyhow`, each message built whole
// (no `.context()`), so `{e}` prints all of it.
use anyhow::{Result, anyhow, bail};
use serde::Deserialize;
use std::path::Path;

/// The built-in themes, embedded at build time.
pub const BUILTIN: &[(&str, &str)] = &[
    ("default", include_str!("../../../../themes/default.toml")),
    ("plain", include_str!("../../../../themes/plain.toml")),
    (
        "powerline",
        include_str!("../../../../themes/powerline.toml"),
    ),
    ("ascii", include_str!("../../../../themes/ascii.toml")),
];

// Parsing and finding themes; the types themselves are pure, in [`a2a_mod_core::theme`].
/// A built-in theme by name; `None` when there is no such built-in.
pub fn builtin(name: &str) -> Option<Result<Theme>> {
    BUILTIN
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| parse(text))
}

/// Parses a theme file. Strict (unknown keys are errors) so a typo is reported rather than
/// silently ignored; the caller falls back to `default`.
pub fn parse(text: &str) -> Result<Theme> {
    let w: WireTheme = toml_edit::de::from_str(text)
        .map_err(|e| anyhow!(a2a_mod_config::toml_error_line(&e.to_string())))?;
    let style = |k: &str, s: Option<WireStyle>| -> Result<Style> {
        s.map(|s| s.to_style().map_err(|e| anyhow!("style.{k}: {e}")))
            .transpose()
            .map(Option::unwrap_or_default)
    };
    let ws = w.style.unwrap_or_default();
    let styles = Styles {
        label: style("label", ws.label)?,
        spinner: style("spinner", ws.spinner)?,
        waiting: style("waiting", ws.waiting)?,
        done: style("done", ws.done)?,
        failed: style("failed", ws.failed)?,
        canceled: style("canceled", ws.canceled)?,
        worker: style("worker", ws.worker)?,
        text: style("text", ws.text)?,
        time: style("time", ws.time)?,
        count: style("count", ws.count)?,
        separator: style("separator", ws.separator)?,
    };
    let mut glyphs = Glyphs::unicode();
    if let Some(g) = w.glyphs {
        let one = |k: &str, v: Option<String>, into: &mut String| -> Result<()> {
            if let Some(v) = v {
                *into = check_glyph(k, v)?;
            }
            Ok(())
        };
        if let Some(frames) = g.spinner {
            if frames.is_empty() || frames.len() > 64 {
                bail!("glyphs.spinner: needs 1 to 64 frames");
            }
            glyphs.spinner = frames
                .into_iter()
                .map(|f| check_glyph("spinner", f))
                .collect::<Result<_, _>>()?;
        }
        one("still", g.still, &mut glyphs.still)?;
        one("waiting", g.waiting, &mut glyphs.waiting)?;
        one("done", g.done, &mut glyphs.done)?;
        one("failed", g.failed, &mut glyphs.failed)?;
        one("canceled", g.canceled, &mut glyphs.canceled)?;
        one("separator", g.separator, &mut glyphs.separator)?;
        one("ellipsis", g.ellipsis, &mut glyphs.ellipsis)?;
    }
    let powerline = match w.powerline {
        None => None,
        Some(p) => Some(Powerline {
            separator: match p.separator.filter(|s| !s.is_empty()) {
                Some(s) => check_glyph("powerline.separator", s)?,
                None => String::new(),
            },
            label: style("powerline.label", p.label)?,
            body: style("powerline.body", p.body)?,
        }),
    };
    Ok(Theme {
        name: w.name.unwrap_or_default(),
        styles,
        glyphs,
        powerline,
    })
}
/// Glyphs are drawn as-is, so a theme may not smuggle escape sequences in them; and each is at
/// most a few columns, so the line's width stays predictable.
fn check_glyph(key: &str, g: String) -> Result<String> {
    if g.is_empty() {
        bail!("glyphs.{key}: empty");
    }
    if a2a_mod_core::text::sanitize(&g) != g || g.contains(' ') {
        bail!("glyphs.{key}: {g:?} holds control, format or space characters");
    }
    if a2a_mod_core::text::width(&g) > 4 {
        bail!("glyphs.{key}: {g:?} is wider than 4 columns");
    }
    Ok(g)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WireTheme {
    name: Option<String>,
    style: Option<WireStyles>,
    glyphs: Option<WireGlyphs>,
    powerline: Option<WirePowerline>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct WireStyles {
    label: Option<WireStyle>,
    spinner: Option<WireStyle>,
    waiting: Option<WireStyle>,
    done: Option<WireStyle>,
    failed: Option<WireStyle>,
    canceled: Option<WireStyle>,
    worker: Option<WireStyle>,
    text: Option<WireStyle>,
    time: Option<WireStyle>,
    count: Option<WireStyle>,
    separator: Option<WireStyle>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct WireStyle {
    fg: Option<String>,
    bg: Option<String>,
    #[serde(default)]
    bold: bool,
    #[serde(default)]
    dim: bool,
    #[serde(default)]
    italic: bool,
}

impl WireStyle {
    fn to_style(&self) -> Result<Style, ColourError> {
        Ok(Style {
            fg: self.fg.as_deref().map(Colour::parse).transpose()?,
            bg: self.bg.as_deref().map(Colour::parse).transpose()?,
            bold: self.bold,
            dim: self.dim,
            italic: self.italic,
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WireGlyphs {
    spinner: Option<Vec<String>>,
    still: Option<String>,
    waiting: Option<String>,
    done: Option<String>,
    failed: Option<String>,
    canceled: Option<String>,
    separator: Option<String>,
    ellipsis: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WirePowerline {
    separator: Option<String>,
    label: Option<WireStyle>,
    body: Option<WireStyle>,
}

/// Theme names are file names under `<config dir>/themes/`: the alias alphabet only.
fn valid_name(name: &str) -> bool {
    a2a_mod_config::validate_alias(name).is_ok()
}

/// The theme called `name`: a built-in, else `<config_dir>/themes/<name>.toml`. Never fails: a
/// missing or broken theme gives `default` and a one-line warning for the log.
pub fn load(name: &str, config_dir: &Path) -> (Theme, Option<String>) {
    // The two themes a status line uses most (NO_COLOR picks plain) are built in code: no TOML
    // parse on the every-second path.
    match name {
        "default" => return (Theme::default_theme(), None),
        "plain" => return (Theme::plain(), None),
        _ => {}
    }
    let parsed = match builtin(name) {
        Some(r) => r.map_err(|e| e.to_string()),
        None if !valid_name(name) => Err("not a valid theme name".to_string()),
        None => {
            let path = config_dir.join("themes").join(format!("{name}.toml"));
            match std::fs::read_to_string(&path) {
                Ok(text) => parse(&text).map_err(|e| format!("\"{}\": {e}", path.display())),
                Err(_) => Err(format!(
                    "no built-in theme of that name ({}) and no readable \"{}\"",
                    BUILTIN
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", "),
                    path.display()
                )),
            }
        }
    };
    match parsed {
        Ok(mut t) => {
            if t.name.is_empty() {
                t.name = name.to_string();
            }
            (t, None)
        }
        Err(e) => (
            Theme::default_theme(),
            Some(format!(
                "statusline theme {name:?}: {e} — using \"default\"; fix [statusline] theme in config.toml"
            )),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_mod_core::theme::Role;

    /// The powerline theme's pieces end in its arrow glyph and a reset (the core's renderer,
    /// over the parsed built-in).
    #[test]
    fn powerline_wraps_each_piece() {
        let pl = builtin("powerline").unwrap().unwrap();
        let row = a2a_mod_core::status::Row {
            worker: "fake",
            text: "x",
            state: a2a_mod_core::task::TaskState::Working,
            started_ms: 0,
            ended_ms: None,
            end: None,
            question: None,
        };
        let l = a2a_mod_core::status::render(&[row], 1_000, 5000, &pl, true);
        assert!(l.contains('\u{e0b0}') && l.ends_with("\x1b[0m"), "{l:?}");
    }

    #[test]
    fn every_builtin_parses() {
        for (name, text) in BUILTIN {
            let t = parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(t.name, *name);
        }
        assert!(
            builtin("plain")
                .unwrap()
                .unwrap()
                .styles
                .get(Role::Label)
                .is_plain()
        );
        assert!(builtin("powerline").unwrap().unwrap().powerline.is_some());
        for g in builtin("ascii").unwrap().unwrap().glyphs.spinner {
            assert!(g.is_ascii());
        }
    }

    /// `default_theme` is hand-built for speed; it must stay what `themes/default.toml` says.
    #[test]
    fn the_built_default_is_the_default_file() {
        let parsed = parse(BUILTIN[0].1).unwrap();
        assert_eq!(BUILTIN[0].0, "default");
        assert_eq!(Theme::default_theme(), parsed);
        assert_eq!(load("default", Path::new("/nonexistent")), (parsed, None));
    }

    /// `plain` is built in code too (NO_COLOR picks it every second); same rule.
    #[test]
    fn the_built_plain_is_the_plain_file() {
        let (_, text) = BUILTIN
            .iter()
            .find(|(name, _)| *name == "plain")
            .expect("plain is a built-in theme");
        assert_eq!(Theme::plain(), parse(text).unwrap());
    }

    #[test]
    fn colours_and_sgr() {
        assert_eq!(Colour::parse("red"), Ok(Colour::Palette(1)));
        assert_eq!(Colour::parse("bright-black"), Ok(Colour::Palette(8)));
        assert_eq!(Colour::parse("246"), Ok(Colour::Indexed(246)));
        assert_eq!(Colour::parse("#d77757"), Ok(Colour::Rgb(0xd7, 0x77, 0x57)));
        assert!(Colour::parse("#d7775").is_err());
        assert!(Colour::parse("mauve").is_err());
        let mut s = String::new();
        Style {
            fg: Some(Colour::Palette(9)),
            bg: Some(Colour::Indexed(238)),
            bold: true,
            ..Style::default()
        }
        .push_sgr(&mut s, &Style::default());
        assert_eq!(s, "\x1b[1;91;48;5;238m");
    }

    #[test]
    fn bad_themes_fall_back_with_one_warning() {
        let dir = tempfile::tempdir().unwrap();
        let (t, w) = load("nope", dir.path());
        assert_eq!(t.name, "default");
        assert!(w.unwrap().contains("nope"));
        let (t, w) = load("../etc/passwd", dir.path());
        assert_eq!((t.name.as_str(), w.is_some()), ("default", true));
        std::fs::create_dir(dir.path().join("themes")).unwrap();
        for bad in [
            "[style]\nlabel = { fg = \"mauve\" }\n",
            "[style]\nlabel = { colour = \"red\" }\n",
            "[glyphs]\nstill = \"\\u001b[31m\"\n",
            "[glyphs]\nspinner = []\n",
            "not toml at all [[[",
        ] {
            std::fs::write(dir.path().join("themes/mine.toml"), bad).unwrap();
            let (t, w) = load("mine", dir.path());
            assert_eq!(t.name, "default", "{bad}");
            let w = w.unwrap();
            assert!(!w.contains('\n'), "{w}");
        }
        std::fs::write(
            dir.path().join("themes/mine.toml"),
            "[style]\nworker = { fg = \"cyan\" }\n",
        )
        .unwrap();
        let (t, w) = load("mine", dir.path());
        assert_eq!((t.name.as_str(), w), ("mine", None));
        assert_eq!(t.styles.worker.fg, Some(Colour::Palette(6)));
    }
}
