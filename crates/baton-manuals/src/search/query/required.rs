//! The spellings a required term may take in a manual.
//!
//! Japanese writes the same word with more or fewer okurigana (送り仮名):
//! 申し込み, 申込み and 申込 are one word, as are 取り扱い, 取扱い and
//! 取扱. A required term is satisfied by any of these spellings.

use baton_text::chars::{self, CharClass};
use baton_text::normalize as text;

fn is_kanji(c: char) -> bool {
    chars::class(c) == CharClass::Kanji
}

fn is_hiragana(c: char) -> bool {
    chars::class(c) == CharClass::Hiragana
}

/// The term in normal form, then its okurigana variants: with every single
/// hiragana between two kanji dropped (申し込み → 申込み), and with a
/// trailing hiragana after a kanji dropped (申込み → 申込). Distinct, the
/// typed form first.
pub(crate) fn variants(term: &str) -> Vec<String> {
    let norm = text::normalize(term);
    if norm.is_empty() {
        return Vec::new();
    }
    let mut out = vec![norm.clone()];
    let chars: Vec<char> = norm.chars().collect();
    let inner: String = chars
        .iter()
        .enumerate()
        .filter(|&(i, c)| {
            let between =
                i > 0 && i + 1 < chars.len() && is_kanji(chars[i - 1]) && is_kanji(chars[i + 1]);
            !(is_hiragana(*c) && between)
        })
        .map(|(_, c)| *c)
        .collect();
    for candidate in [inner.clone(), strip_trailing(&norm), strip_trailing(&inner)] {
        if candidate.chars().count() >= 2 && !out.contains(&candidate) {
            out.push(candidate);
        }
    }
    out
}

/// Drops one trailing hiragana that follows a kanji (取扱い → 取扱).
fn strip_trailing(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    match chars.as_slice() {
        [.., k, h] if is_kanji(*k) && is_hiragana(*h) => chars[..chars.len() - 1].iter().collect(),
        _ => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn okurigana_variants_of_a_term() {
        assert_eq!(
            variants("申し込み"),
            ["申し込み", "申込み", "申し込", "申込"]
        );
        assert_eq!(variants("取扱い"), ["取扱い", "取扱"]);
        assert_eq!(variants("がん保険"), ["がん保険"]);
        assert_eq!(variants("ＡＰＩ"), ["api"]);
        assert!(variants("  ").is_empty());
    }
}
