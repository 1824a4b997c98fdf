//! Untrusted text made safe to show: [`sanitize`] strips everything a terminal would act on, and
//! [`cut`] shortens by display width. Pure (no IO, no env); shared by the status line, the hook
//! context and the wake line.
//!
//! Worker text (task echoes, questions, results) is written by a remote party. Printed raw it could
//! recolour or clear the screen, set the window title, plant an OSC 8 hyperlink, ring the bell, or
//! reorder what the user reads with bidi overrides ("Trojan Source"). So every C0/C1 control, every
//! escape sequence with its payload, and the invisible format characters are removed; line breaks
//! and tabs become spaces, because every consumer here shows one line.

use unicode_width::UnicodeWidthStr;

/// The ellipsis [`cut`] appends.
pub const ELLIPSIS: &str = "…";

/// `s` without control characters, escape sequences (CSI, OSC, DCS, SOS, PM, APC, with their
/// payloads, in 7-bit and C1 form), bidi controls or invisible format characters; newlines and tabs
/// are spaces, runs of whitespace one space, and the ends trimmed. For one-line displays.
///
/// An escape string that is never terminated swallows the rest of the text, as a terminal would
/// have hidden it anyway; what remains can never start a sequence.
pub fn sanitize(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(4096));
    // Starts false so leading whitespace is dropped.
    let mut pending_space = false;
    for c in safe_chars(s) {
        if c.is_whitespace() {
            pending_space = !out.is_empty();
        } else {
            if pending_space {
                out.push(' ');
                pending_space = false;
            }
            out.push(c);
        }
    }
    out
}

/// Untrusted text for one line of a message (an error, a listing): [`sanitize`]d, then [`cut`] to
/// `cols` columns.
pub fn one_line(s: &str, cols: usize) -> String {
    cut(&sanitize(s), cols)
}

/// Like [`sanitize`], but for multi-line text (results, questions shown to Claude): line breaks
/// survive as `\n` (CR LF, CR and the Unicode separators included) and tabs as tabs.
pub fn sanitize_lines(s: &str) -> String {
    safe_chars(s).collect()
}

/// The characters of `s` that are safe to show: sequences and controls dropped, every kind of
/// line break as `\n`, tabs kept.
fn safe_chars(s: &str) -> impl Iterator<Item = char> + '_ {
    let mut chars = s.chars().peekable();
    std::iter::from_fn(move || {
        loop {
            let c = chars.next()?;
            match c {
                '\u{1b}' => match chars.next() {
                    Some('[') => skip_csi(&mut chars),
                    Some(']' | 'P' | 'X' | '^' | '_') => skip_string(&mut chars),
                    // nF: intermediates, then one final byte (e.g. `ESC ( B`).
                    Some('\u{20}'..='\u{2f}') => {
                        while chars
                            .next_if(|c| ('\u{20}'..='\u{2f}').contains(c))
                            .is_some()
                        {}
                        chars.next_if(|c| ('\u{30}'..='\u{7e}').contains(c));
                    }
                    // Fp/Fe/Fs (`ESC c`, `ESC 7`, ...) are two characters; anything else after
                    // ESC is dropped with it, as it cannot be shown safely either.
                    _ => {}
                },
                '\u{9b}' => skip_csi(&mut chars),
                '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
                '\t' => return Some('\t'),
                '\r' if chars.peek() == Some(&'\n') => {}
                '\n' | '\r' | '\u{0b}' | '\u{0c}' | '\u{85}' | '\u{2028}' | '\u{2029}' => {
                    return Some('\n');
                }
                c if c.is_control() || is_invisible_format(c) => {}
                c => return Some(c),
            }
        }
    })
}

/// CSI: parameter and intermediate bytes up to one final byte; anything outside the CSI alphabet
/// ends it (malformed), and is dropped too.
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if !('\u{20}'..='\u{3f}').contains(&c) {
            return;
        }
    }
}

/// OSC, DCS, SOS, PM, APC: everything up to ST (`ESC \` or C1 ST) or BEL.
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{07}' | '\u{9c}' => return,
            '\u{1b}' => {
                chars.next_if_eq(&'\\');
                return;
            }
            _ => {}
        }
    }
}

/// Characters that draw nothing but change how text around them reads: bidi embeddings,
/// overrides, isolates and marks, zero-width spaces and joiners used for smuggling, invisible
/// operators, the BOM, interlinear annotations and Unicode tag characters. ZWJ/ZWNJ stay: emoji
/// sequences and several scripts need them, and they cannot reorder or hide text.
fn is_invisible_format(c: char) -> bool {
    matches!(c,
        '\u{ad}'                    // soft hyphen
        | '\u{34f}'                 // combining grapheme joiner
        | '\u{61c}'                 // Arabic letter mark (bidi)
        | '\u{115f}' | '\u{1160}'   // Hangul fillers
        | '\u{17b4}' | '\u{17b5}'
        | '\u{180b}'..='\u{180f}'   // Mongolian variation selectors and vowel separator
        | '\u{200b}'                // zero-width space
        | '\u{200e}' | '\u{200f}'   // LRM, RLM
        | '\u{202a}'..='\u{202e}'   // LRE RLE PDF LRO RLO
        | '\u{2060}'..='\u{206f}'   // word joiner, invisible operators, LRI RLI FSI PDI, deprecated
        | '\u{3164}' | '\u{ffa0}'   // Hangul fillers
        | '\u{feff}'                // BOM / ZWNBSP
        | '\u{fff9}'..='\u{fffb}'   // interlinear annotation
        | '\u{1d173}'..='\u{1d17a}' // musical format controls
        | '\u{e0000}'..='\u{e007f}' // tags
    )
}

/// Display width in terminal columns.
pub fn width(s: &str) -> usize {
    s.width()
}

/// `s` shortened to at most `cols` columns, ending in `…` when shortened. Never splits a wide
/// character past the limit: a double-width character that would straddle it is left out.
pub fn cut(s: &str, cols: usize) -> String {
    cut_with(s, cols, ELLIPSIS)
}

/// [`cut`] with another ellipsis (ASCII `...` for terminals without the glyph).
pub fn cut_with(s: &str, cols: usize, ellipsis: &str) -> String {
    // The common case (short text) costs one width pass and no allocation beyond the copy.
    if s.len() <= cols || s.width() <= cols {
        return s.to_string();
    }
    let ell = ellipsis.width();
    if cols < ell {
        return String::new();
    }
    let budget = cols - ell;
    let mut end = 0;
    for (i, c) in s.char_indices() {
        let next = i + c.len_utf8();
        // Width of the whole prefix, not a sum of char widths: sequences (emoji + VS16) can be
        // wider than their parts, and the prefix measure is what a terminal will draw.
        if s[..next].width() > budget {
            break;
        }
        end = next;
    }
    // A joiner or selector left dangling would fuse with the ellipsis.
    let head = s[..end].trim_end_matches(['\u{200c}', '\u{200d}', '\u{fe0e}', '\u{fe0f}', ' ']);
    let mut out = String::with_capacity(head.len() + ellipsis.len());
    out.push_str(head);
    out.push_str(ellipsis);
    out
}

/// The part of `clean` (already [`sanitize`]d) that [`cut_with`] can ever show at `cols` columns,
/// whatever the ellipsis: `clean` itself when it fits, else a prefix wider than `cols` that does
/// not end in a space. Lets the status snapshot keep a few bytes of a 100 kB prompt and still draw
/// exactly what the whole text would.
///
/// Why a prefix wider than `cols` is enough: `cut_with` stops at the first character where the
/// prefix gets wider than its budget (≤ `cols`), and this prefix's own end is such a place, so the
/// stop lies inside it; being wider than `cols`, it is cut, not shown whole. It must not end in a
/// space because `sanitize` (which the renderer applies again) would trim it, and the shorter text
/// might then fit without an ellipsis.
pub fn keep_for_cut(clean: &str, cols: usize) -> &str {
    if clean.len() <= cols || clean.width() <= cols {
        return clean;
    }
    // Grow by doubling so hostile text (kilobytes of zero-width joiners) costs O(n), not O(n²).
    let mut chars = cols.saturating_add(1).max(1);
    loop {
        let end = clean
            .char_indices()
            .nth(chars)
            .map_or(clean.len(), |(i, _)| i);
        let head = &clean[..end];
        if end == clean.len() {
            return clean;
        }
        if head.width() > cols {
            if !head.ends_with(' ') {
                return head;
            }
            // `sanitize` left single spaces, so the next character is not one.
            let next = clean[end..].chars().next().map_or(0, char::len_utf8);
            return &clean[..end + next];
        }
        chars = chars.saturating_mul(2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The snapshot keeps `keep_for_cut`; the line must come out as if it kept everything.
    #[test]
    fn keep_for_cut_draws_like_the_whole_text() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let alphabet = [
            "a", "b", " ", "  ", "漢", "\u{200d}", "\u{fe0f}", "😀", "e\u{301}", "\t", "\x1b[1m",
            "\u{200b}", "…",
        ];
        for _ in 0..5000 {
            let n = (next() % 80) as usize;
            let raw: String = (0..n)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            let clean = sanitize(&raw);
            for cols in [0, 1, 3, 24, 32, 48] {
                let kept = keep_for_cut(&clean, cols);
                assert!(clean.starts_with(kept));
                assert_eq!(sanitize(kept), kept, "{raw:?}");
                for ell in ["…", "...", "~"] {
                    assert_eq!(
                        cut_with(&sanitize(kept), cols, ell),
                        cut_with(&clean, cols, ell),
                        "{raw:?} at {cols} with {ell:?}"
                    );
                }
            }
        }
        let zw = format!("a{}", "\u{200d}".repeat(100_000));
        assert_eq!(keep_for_cut(&zw, 32), zw, "all of it fits in 1 column");
        let long = "x".repeat(100_000);
        assert_eq!(keep_for_cut(&long, 32).len(), 33);
    }

    #[test]
    fn strips_escapes_and_controls() {
        let cases: &[(&str, &str)] = &[
            ("plain text", "plain text"),
            ("\x1b[31mred\x1b[0m", "red"),
            ("\x1b[38;2;1;2;3mrgb", "rgb"),
            ("a\x1b]0;title\x07b", "ab"),
            ("a\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\b", "alinkb"),
            ("a\x1bP1$r payload\x1b\\b", "ab"),
            ("a\x1b_apc\x1b\\b", "ab"),
            ("a\x1b(Bb", "ab"),
            ("a\x1bcb", "ab"),
            ("a\x07b\x08c", "abc"),
            ("a\u{9b}31mb", "ab"),
            ("a\u{9d}0;t\u{9c}b", "ab"),
            ("a\u{85}b", "a b"),
            ("a\u{80}\u{81}\u{8d}b", "ab"),
            ("a\u{9f}apc\u{9c}b", "ab"),
            ("trail\x1b", "trail"),
            ("trail\x1b[", "trail"),
            ("unterminated\x1b]0;title", "unterminated"),
            ("\u{202e}evil\u{202c}", "evil"),
            ("a\u{2066}b\u{2069}c\u{200f}d", "abcd"),
            ("zero\u{200b}width\u{feff}", "zerowidth"),
            ("tag\u{e0041}\u{e0042}s", "tags"),
            ("line one\nline two\r\n\tthree", "line one line two three"),
            ("  lots   of\n\n space  ", "lots of space"),
            ("del\x7f", "del"),
            ("👩\u{200d}💻 ok", "👩\u{200d}💻 ok"),
            ("", ""),
        ];
        for (input, want) in cases {
            assert_eq!(sanitize(input), *want, "{input:?}");
        }
    }

    /// Whatever goes in, nothing that starts a terminal sequence comes out.
    #[test]
    fn output_never_holds_controls() {
        let nasty: String = (0u32..0x300)
            .chain(0x2000..0x2070)
            .filter_map(char::from_u32)
            .collect();
        let out = sanitize(&nasty);
        assert!(
            !out.chars()
                .any(|c| c.is_control() || is_invisible_format(c)),
            "{out:?}"
        );
    }

    #[test]
    fn cut_by_width() {
        assert_eq!(cut("short", 32), "short");
        assert_eq!(cut("abcdef", 5), "abcd…");
        assert_eq!(cut("abcdef", 6), "abcdef");
        assert_eq!(cut("abc", 0), "");
        assert_eq!(cut("abc", 1), "…");
        // Wide characters: never split, never past the limit.
        let cjk = "中".repeat(20);
        let c = cut(&cjk, 32);
        assert_eq!(c, format!("{}…", "中".repeat(15)));
        assert!(width(&c) <= 32);
        let c = cut(&format!("a{cjk}"), 32);
        assert_eq!(c, format!("a{}…", "中".repeat(15)));
        assert_eq!(width(&c), 32);
        let emoji = "🎉".repeat(40);
        assert!(width(&cut(&emoji, 32)) <= 32);
        assert_eq!(cut_with("abcdef", 5, "..."), "ab...");
        for n in 0..40 {
            assert!(width(&cut(&format!("x{cjk}"), n)) <= n, "{n}");
        }
    }
}
