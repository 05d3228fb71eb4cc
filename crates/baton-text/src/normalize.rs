//! Text normalisation shared by the index and the query analyser, and line
//! bookkeeping for the readers.
//!
//! Normal form: Unicode NFKC, then lower case (with `ß`→`ss` and final
//! sigma folded like Unicode case folding), dash variants → `-`, every run
//! of white space (newlines included) → one space, trimmed.

use unicode_normalization::UnicodeNormalization;

/// Converts CRLF and lone CR line breaks to LF.
pub fn to_lf(text: &str) -> String {
    if !text.contains('\r') {
        return text.to_string();
    }
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// The normal form used for indexing and matching (see the module docs).
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut pending_space = false;
    for c in text.nfkc() {
        if c.is_whitespace() {
            pending_space = !out.is_empty();
            continue;
        }
        if pending_space {
            out.push(' ');
            pending_space = false;
        }
        push_folded(&mut out, c);
    }
    out
}

fn push_folded(out: &mut String, c: char) {
    match c {
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2212}' => {
            out.push('-')
        }
        'ß' | 'ẞ' => out.push_str("ss"),
        'ς' => out.push('σ'),
        c if c.is_ascii() => out.push(c.to_ascii_lowercase()),
        c => out.extend(c.to_lowercase()),
    }
}

/// A text split into lines, with character offsets: what `manual_read` and
/// `manual_scan` work on. Offsets are Unicode scalar values (not bytes) of
/// the LF-normalised text.
#[derive(Debug, Clone)]
pub struct LineText {
    chars: Vec<char>,
    /// Char offset of the first character of every line (line 1 at index 0).
    line_starts: Vec<usize>,
}

impl LineText {
    /// Splits an LF-normalised text. A trailing newline does not start a new line.
    pub fn new(text: &str) -> Self {
        let chars: Vec<char> = text.chars().collect();
        let mut line_starts = vec![0];
        for (i, c) in chars.iter().enumerate() {
            if *c == '\n' && i + 1 < chars.len() {
                line_starts.push(i + 1);
            }
        }
        LineText { chars, line_starts }
    }

    /// Number of characters.
    pub fn char_len(&self) -> usize {
        self.chars.len()
    }

    /// Number of lines (an empty text has 0 lines).
    pub fn line_count(&self) -> usize {
        if self.chars.is_empty() {
            0
        } else {
            self.line_starts.len()
        }
    }

    /// Char offset of the start of a 1-based line (`None` when out of range).
    pub fn line_start(&self, line: usize) -> Option<usize> {
        if line == 0 {
            return None;
        }
        self.line_starts.get(line - 1).copied()
    }

    /// Char offset just past the end of a 1-based line, newline included.
    pub fn line_end(&self, line: usize) -> Option<usize> {
        if line == 0 || line > self.line_starts.len() {
            return None;
        }
        Some(
            self.line_starts
                .get(line)
                .copied()
                .unwrap_or(self.chars.len()),
        )
    }

    /// The 1-based line holding a char offset (the last line for the end offset).
    pub fn line_of(&self, offset: usize) -> usize {
        match self.line_starts.binary_search(&offset) {
            Ok(i) => i + 1,
            Err(i) => i.max(1),
        }
    }

    /// The characters in `[start, end)`, clamped to the text.
    pub fn slice(&self, start: usize, end: usize) -> String {
        let end = end.min(self.chars.len());
        let start = start.min(end);
        self.chars[start..end].iter().collect()
    }

    /// The characters in `[start, end)` cut to `max_chars`, preferring to
    /// end after a newline when one falls in the last half of the window.
    /// Returns the end offset actually used.
    pub fn window_end(&self, start: usize, end: usize, max_chars: usize) -> usize {
        let end = end.min(self.chars.len());
        if end.saturating_sub(start) <= max_chars {
            return end;
        }
        let hard = start + max_chars;
        let half = start + max_chars / 2;
        (half..hard)
            .rev()
            .find(|&i| self.chars[i] == '\n')
            .map(|i| i + 1)
            .unwrap_or(hard)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_applies_nfkc_case_folding_and_spaces() {
        assert_eq!(normalize("ＡＢＣ１２３"), "abc123");
        assert_eq!(normalize("  Straße\n\t ｶﾀｶﾅ  "), "strasse カタカナ");
        assert_eq!(normalize("a—b"), "a-b");
    }

    #[test]
    fn line_text_counts_lines_and_offsets() {
        let t = LineText::new("ab\ncd\n");
        assert_eq!(t.line_count(), 2);
        assert_eq!(t.line_start(2), Some(3));
        assert_eq!(t.line_end(2), Some(6));
        assert_eq!(t.line_of(4), 2);
        assert_eq!(t.line_of(6), 2);
        assert_eq!(LineText::new("").line_count(), 0);
        assert_eq!(to_lf("a\r\nb\rc"), "a\nb\nc");
    }
}
