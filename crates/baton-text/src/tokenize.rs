//! Dictionary-free tokenisation for Japanese and English.
//!
//! Input is text already in normal form ([`crate::normalize::normalize`]).
//! * CJK runs (kanji, hiragana, katakana, hangul) yield every character
//!   bigram, plus a unigram for every kanji (so one-character queries such
//!   as `額` match) and for a lone katakana/hangul character;
//! * runs of other letters and digits yield one word, lightly stemmed for
//!   English (`claims` → `claim`, `configured` → `configur`); a word mixing
//!   letters and digits (`k867`) also yields its letter and digit parts;
//! * everything else separates tokens.

use std::borrow::Cow;

use crate::chars::{CharClass, class, is_cjk};

/// The kind of a token, used by the query analyser to weight it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// Two CJK characters, both hiragana.
    KanaBigram,
    /// Two CJK characters, at least one kanji or katakana.
    Bigram,
    /// One CJK character.
    Unigram,
    /// A word of letters/digits.
    Word,
    /// A number expression with its counter or separators (`2章-1`, `3条`,
    /// `4-2`; see [`crate::numbers`]).
    Number,
}

/// Calls `emit` for every index token of a normalised text: the character
/// and word tokens, then the number-expression tokens.
pub fn for_each_token(text: &str, mut emit: impl FnMut(&str, TokenKind)) {
    for_each_plain_token(text, &mut emit);
    if text.bytes().any(|b| b.is_ascii_digit()) || text.contains('第') {
        for expr in crate::numbers::find(text) {
            for token in &expr.tokens {
                emit(token, TokenKind::Number);
            }
        }
    }
}

/// The character and word tokens of a normalised text.
fn for_each_plain_token(text: &str, mut emit: impl FnMut(&str, TokenKind)) {
    let mut run_start: Option<(usize, CharClass)> = None;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let cls = class(c);
        // Track CJK runs for bigrams and words for word tokens.
        if is_cjk(cls) {
            if let Some((next_i, next_c)) = chars.peek().copied() {
                let next_cls = class(next_c);
                if is_cjk(next_cls) {
                    let end = next_i + next_c.len_utf8();
                    let kind = if cls == CharClass::Hiragana && next_cls == CharClass::Hiragana {
                        TokenKind::KanaBigram
                    } else {
                        TokenKind::Bigram
                    };
                    emit(&text[i..end], kind);
                }
            }
            let lone = !text[..i]
                .chars()
                .next_back()
                .is_some_and(|p| is_cjk(class(p)))
                && !chars.peek().is_some_and(|(_, n)| is_cjk(class(*n)));
            if cls == CharClass::Kanji || (lone && cls == CharClass::Katakana) {
                emit(&text[i..i + c.len_utf8()], TokenKind::Unigram);
            }
            run_start = None;
            continue;
        }
        if cls == CharClass::Word {
            if run_start.is_none() {
                run_start = Some((i, cls));
            }
            let ends = !chars
                .peek()
                .is_some_and(|(_, n)| class(*n) == CharClass::Word);
            if ends && let Some((start, _)) = run_start.take() {
                emit_word(&text[start..i + c.len_utf8()], &mut emit);
            }
            continue;
        }
        run_start = None;
    }
}

fn emit_word(word: &str, emit: &mut impl FnMut(&str, TokenKind)) {
    let has_digit = word.bytes().any(|b| b.is_ascii_digit());
    let has_alpha = word.chars().any(|c| c.is_alphabetic());
    if has_digit && has_alpha {
        emit(word, TokenKind::Word);
        // Letter and digit parts: `k867` → `k`, `867`.
        let mut start = 0;
        let mut prev_digit: Option<bool> = None;
        for (i, c) in word.char_indices() {
            let d = c.is_ascii_digit();
            if prev_digit.is_some_and(|p| p != d) {
                emit(&word[start..i], TokenKind::Word);
                start = i;
            }
            prev_digit = Some(d);
        }
        emit(&word[start..], TokenKind::Word);
    } else {
        emit(&stem(word), TokenKind::Word);
    }
}

/// A light English stemmer (plural/verb suffixes); non-ASCII words are kept.
pub fn stem(word: &str) -> Cow<'_, str> {
    if !word.is_ascii() || word.len() <= 3 {
        return Cow::Borrowed(word);
    }
    let rules: [(&str, &str, usize); 12] = [
        ("ational", "ate", 4),
        ("ization", "ize", 4),
        ("ations", "ate", 4),
        ("ation", "ate", 4),
        ("sses", "ss", 2),
        ("ies", "y", 3),
        ("ing", "", 4),
        ("ed", "", 4),
        ("ly", "", 4),
        ("es", "", 5),
        ("ss", "ss", 2),
        ("s", "", 3),
    ];
    for (suffix, replacement, min_stem) in rules {
        if let Some(base) = word.strip_suffix(suffix) {
            if base.len() < min_stem
                || (suffix == "s" && (base.ends_with('u') || base.ends_with('i')))
            {
                return Cow::Borrowed(word);
            }
            let mut out = String::with_capacity(base.len() + replacement.len());
            out.push_str(base);
            out.push_str(replacement);
            // `configure`/`configured`/`configuring` share a stem.
            if out.ends_with('e') && out.len() > 4 && replacement.is_empty() {
                out.pop();
            }
            return Cow::Owned(out);
        }
    }
    if word.ends_with('e') && word.len() > 4 {
        return Cow::Borrowed(&word[..word.len() - 1]);
    }
    Cow::Borrowed(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for_each_token(text, |t, _| out.push(t.to_string()));
        out
    }

    #[test]
    fn japanese_yields_bigrams_and_kanji_unigrams() {
        assert_eq!(tokens("入院する"), ["入院", "入", "院す", "院", "する"]);
        assert_eq!(tokens("額"), ["額"]);
        assert_eq!(tokens("カ"), ["カ"]);
    }

    #[test]
    fn words_are_stemmed_and_split_between_letters_and_digits() {
        assert_eq!(tokens("claims k867"), ["claim", "k867", "k", "867"]);
        assert_eq!(stem("configured"), stem("configuring"));
        assert_eq!(stem("configure"), stem("configured"));
        assert_eq!(stem("status"), "status");
    }

    #[test]
    fn number_expressions_add_tokens() {
        assert_eq!(
            tokens("第2章-1"),
            ["第", "2", "章", "1", "2-1", "2章", "2章-1"]
        );
    }

    #[test]
    fn mixed_scripts_split_runs() {
        assert_eq!(tokens("api設定"), ["api", "設定", "設", "定"]);
    }
}
