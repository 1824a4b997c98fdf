//! What a status-line theme is: colours, styles per part of the line, glyphs, powerline blocks, and
//! the two themes built in code (`default`, `plain`). Pure data and SGR rendering; reading and
//! parsing theme files is the status line's (`crates/claude/src/statusline/theme.rs`) (the loader stays outside
//! `core`).

/// A terminal colour: the 16-colour palette, the 256-colour index, or true colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Colour {
    Palette(u8),
    Indexed(u8),
    Rgb(u8, u8, u8),
}

/// Why a theme's colour value was refused (the message names the value and what is accepted).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ColourError {
    #[error("colour {0:?} is not #rrggbb")]
    NotHex(String),
    #[error("colour {0:?} is not a name (red, bright-red, ...), 0-255 or #rrggbb")]
    Unknown(String),
}

impl Colour {
    pub fn parse(s: &str) -> Result<Colour, ColourError> {
        const NAMES: [&str; 8] = [
            "black", "red", "green", "yellow", "blue", "magenta", "cyan", "white",
        ];
        let s = s.trim();
        if let Some(hex) = s.strip_prefix('#') {
            let ok = hex.len() == 6 && hex.bytes().all(|b| b.is_ascii_hexdigit());
            let byte = |i: usize| u8::from_str_radix(hex.get(i..i + 2).unwrap_or("x"), 16);
            return match (ok, byte(0), byte(2), byte(4)) {
                (true, Ok(r), Ok(g), Ok(b)) => Ok(Colour::Rgb(r, g, b)),
                _ => Err(ColourError::NotHex(s.to_string())),
            };
        }
        if let Ok(n) = s.parse::<u8>() {
            return Ok(if n < 16 {
                Colour::Palette(n)
            } else {
                Colour::Indexed(n)
            });
        }
        let (bright, base) = match s.strip_prefix("bright-") {
            Some(b) => (8, b),
            None => (0, s),
        };
        match NAMES.iter().position(|n| *n == base) {
            Some(i) => Ok(Colour::Palette(i as u8 + bright)),
            None => Err(ColourError::Unknown(s.to_string())),
        }
    }

    fn push_sgr(self, out: &mut String, background: bool) {
        use std::fmt::Write;
        let _ = match (self, background) {
            (Colour::Palette(n), false) if n < 8 => write!(out, "{}", 30 + n),
            (Colour::Palette(n), false) => write!(out, "{}", 90 + n - 8),
            (Colour::Palette(n), true) if n < 8 => write!(out, "{}", 40 + n),
            (Colour::Palette(n), true) => write!(out, "{}", 100 + n - 8),
            (Colour::Indexed(n), bg) => write!(out, "{};5;{n}", if bg { 48 } else { 38 }),
            (Colour::Rgb(r, g, b), bg) => {
                write!(out, "{};2;{r};{g};{b}", if bg { 48 } else { 38 })
            }
        };
    }
}

/// How one part of the line is drawn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Style {
    pub fg: Option<Colour>,
    pub bg: Option<Colour>,
    pub bold: bool,
    pub dim: bool,
    pub italic: bool,
}

impl Style {
    pub fn is_plain(&self) -> bool {
        *self == Style::default()
    }

    /// The SGR sequence that sets this style, after `base` (a powerline block's background).
    pub fn push_sgr(&self, out: &mut String, base: &Style) {
        let fg = self.fg.or(base.fg);
        let bg = self.bg.or(base.bg);
        let mut params = String::new();
        let sep = |p: &mut String| {
            if !p.is_empty() {
                p.push(';');
            }
        };
        if self.bold || base.bold {
            sep(&mut params);
            params.push('1');
        }
        if self.dim || base.dim {
            sep(&mut params);
            params.push('2');
        }
        if self.italic || base.italic {
            sep(&mut params);
            params.push('3');
        }
        if let Some(c) = fg {
            sep(&mut params);
            c.push_sgr(&mut params, false);
        }
        if let Some(c) = bg {
            sep(&mut params);
            c.push_sgr(&mut params, true);
        }
        if !params.is_empty() {
            out.push_str("\x1b[");
            out.push_str(&params);
            out.push('m');
        }
    }
}

/// The parts of a status line, each with its own style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Label,
    Spinner,
    Waiting,
    Done,
    Failed,
    Canceled,
    Worker,
    Text,
    Time,
    Count,
    Separator,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Styles {
    pub label: Style,
    pub spinner: Style,
    pub waiting: Style,
    pub done: Style,
    pub failed: Style,
    pub canceled: Style,
    pub worker: Style,
    pub text: Style,
    pub time: Style,
    pub count: Style,
    pub separator: Style,
}

impl Styles {
    pub fn get(&self, role: Role) -> &Style {
        match role {
            Role::Label => &self.label,
            Role::Spinner => &self.spinner,
            Role::Waiting => &self.waiting,
            Role::Done => &self.done,
            Role::Failed => &self.failed,
            Role::Canceled => &self.canceled,
            Role::Worker => &self.worker,
            Role::Text => &self.text,
            Role::Time => &self.time,
            Role::Count => &self.count,
            Role::Separator => &self.separator,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Glyphs {
    pub spinner: Vec<String>,
    pub still: String,
    pub waiting: String,
    pub done: String,
    pub failed: String,
    pub canceled: String,
    pub separator: String,
    pub ellipsis: String,
}

impl Glyphs {
    /// The seed's glyphs (docs/how-it-works.md).
    pub fn unicode() -> Glyphs {
        Glyphs {
            spinner: ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]
                .map(String::from)
                .to_vec(),
            still: "●".into(),
            waiting: "?".into(),
            done: "✓".into(),
            failed: "✕".into(),
            canceled: "⊘".into(),
            separator: "·".into(),
            ellipsis: "…".into(),
        }
    }

    /// For terminals or fonts without the glyphs: nothing outside ASCII.
    pub fn ascii() -> Glyphs {
        Glyphs {
            spinner: ["|", "/", "-", "\\"].map(String::from).to_vec(),
            still: "*".into(),
            waiting: "?".into(),
            done: "+".into(),
            failed: "x".into(),
            canceled: "-".into(),
            separator: "|".into(),
            ellipsis: "...".into(),
        }
    }
}

/// Powerline blocks: the label and the body on their own backgrounds, joined by an arrow.
#[derive(Debug, Clone, PartialEq)]
pub struct Powerline {
    pub separator: String,
    pub label: Style,
    pub body: Style,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    pub name: String,
    pub styles: Styles,
    pub glyphs: Glyphs,
    pub powerline: Option<Powerline>,
}

impl Theme {
    /// No colour, the seed's glyphs; needs no parsing, so it is the fallback of last resort.
    pub fn plain() -> Theme {
        Theme {
            name: "plain".into(),
            styles: Styles::default(),
            glyphs: Glyphs::unicode(),
            powerline: None,
        }
    }

    /// The default theme, built in code rather than parsed: it is what nearly every status-line
    /// run draws with, and parsing `themes/default.toml` cost a measurable share of that process.
    /// invariant: equal to the parsed `themes/default.toml` (tested in `crates/claude/src/statusline/theme.rs`, so editing one
    /// without the other fails the build's tests).
    pub fn default_theme() -> Theme {
        let fg = |c| Style {
            fg: Some(c),
            ..Style::default()
        };
        let grey = fg(Colour::Indexed(246));
        Theme {
            name: "default".into(),
            styles: Styles {
                label: grey,
                spinner: fg(Colour::Rgb(0xd7, 0x77, 0x57)),
                waiting: Style {
                    bold: true,
                    ..fg(Colour::Palette(3))
                },
                done: fg(Colour::Palette(2)),
                failed: fg(Colour::Palette(1)),
                canceled: grey,
                worker: Style {
                    bold: true,
                    ..Style::default()
                },
                text: Style::default(),
                time: grey,
                count: Style::default(),
                separator: grey,
            },
            glyphs: Glyphs::unicode(),
            powerline: None,
        }
    }

    /// The same colours with ASCII glyphs (the fallback for terminals without the glyphs).
    pub fn into_ascii(mut self) -> Theme {
        self.glyphs = Glyphs::ascii();
        if let Some(p) = &mut self.powerline {
            p.separator = String::new();
        }
        self
    }
}
