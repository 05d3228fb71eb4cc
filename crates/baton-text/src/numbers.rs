//! Numbers with their counters and separators as searchable tokens.
//!
//! Character bigrams and word tokens lose what a section number means:
//! 「第2章-1」 becomes 第, 章 and the digits, so chapter 2-1 and 2-2 look the
//! same. This module finds *number expressions* in normalised text and
//! names them with tokens that keep the structure:
//!
//! | text | tokens |
//! | --- | --- |
//! | `第2章-1` (also `第 2 章-1`, `第二章-1`) | `2章`, `2章-1`, `2-1` |
//! | `第3条` | `3条` |
//! | `2-1`, `4.2`, `§4.2` | `2-1`, `4-2` |
//! | `60日`, `5年` | `60日`, `5年` |
//!
//! Separators (`-`, `.`, `・`) are written `-`; the counter follows the
//! number it counts. Kanji numerals are read after 第 (第十二条 → `12条`).
//! Every token contains a digit and a `-` or a non-digit counter, so it can
//! never collide with a bigram or a word token.

/// Counters (longest first, so `か月` wins over `月`).
const COUNTERS: &[&str] = &[
    "か月", "ヶ月", "カ月", "ヵ月", "箇月", "時間", "万円", "章", "条", "項", "号", "節", "編",
    "款", "部", "巻", "日", "月", "年", "歳", "回", "円", "倍", "割", "%", "週", "件", "人", "個",
    "度", "頁",
];

/// Most digits in one part of a number (longer runs are identifiers, not numbers).
const MAX_DIGITS: usize = 6;
/// Most separated parts kept (`1-2-3-4`).
const MAX_PARTS: usize = 4;

/// One number expression found in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumberExpr {
    /// Byte range of the expression in the text.
    pub start: usize,
    /// End of the byte range.
    pub end: usize,
    /// Its tokens, most general first; the last one is the most specific.
    pub tokens: Vec<String>,
}

impl NumberExpr {
    /// The most specific token (what the expression names exactly).
    pub fn specific(&self) -> &str {
        self.tokens.last().map(String::as_str).unwrap_or("")
    }
}

fn is_digit(c: char) -> bool {
    c.is_ascii_digit()
}

fn kanji_digit(c: char) -> Option<u32> {
    Some(match c {
        '〇' | '零' => 0,
        '一' => 1,
        '二' => 2,
        '三' => 3,
        '四' => 4,
        '五' => 5,
        '六' => 6,
        '七' => 7,
        '八' => 8,
        '九' => 9,
        _ => return None,
    })
}

/// Reads a kanji numeral (1–999) at the start of `s`; returns (value, bytes).
fn kanji_number(s: &str) -> Option<(u32, usize)> {
    let mut total = 0u32;
    let mut current: Option<u32> = None;
    let mut used = 0;
    for (i, c) in s.char_indices() {
        match c {
            '十' | '百' => {
                let unit = if c == '十' { 10 } else { 100 };
                total += current.unwrap_or(1) * unit;
                current = None;
            }
            c => match kanji_digit(c) {
                Some(d) => {
                    if current.is_some() {
                        return None;
                    }
                    current = Some(d);
                }
                None => break,
            },
        }
        used = i + c.len_utf8();
    }
    if used == 0 {
        return None;
    }
    let value = total + current.unwrap_or(0);
    (value > 0).then_some((value, used))
}

/// Reads `D (sep D)*` of ASCII digits at the start of `s`; returns the parts
/// and the bytes used (a trailing separator is not consumed).
fn digit_parts(s: &str) -> (Vec<&str>, usize) {
    let mut parts = Vec::new();
    let mut pos = 0;
    loop {
        let rest = &s[pos..];
        let len = rest.bytes().take_while(u8::is_ascii_digit).count();
        if len == 0 || len > MAX_DIGITS || parts.len() == MAX_PARTS {
            if parts.is_empty() && len > MAX_DIGITS {
                return (Vec::new(), 0);
            }
            break;
        }
        parts.push(&rest[..len]);
        pos += len;
        let after = &s[pos..];
        let sep = after
            .chars()
            .next()
            .filter(|c| matches!(c, '-' | '.' | '・'));
        match sep {
            Some(c) if after[c.len_utf8()..].chars().next().is_some_and(is_digit) => {
                pos += c.len_utf8();
            }
            _ => break,
        }
    }
    (parts, pos)
}

fn skip_space(s: &str, pos: usize) -> usize {
    if s[pos..].starts_with(' ') {
        pos + 1
    } else {
        pos
    }
}

fn counter_at(s: &str) -> Option<&'static str> {
    COUNTERS.iter().copied().find(|c| s.starts_with(c))
}

/// Strips leading zeros (`01` → `1`) so `第01条` and `第1条` agree.
fn canonical(part: &str) -> &str {
    let t = part.trim_start_matches('0');
    if t.is_empty() { "0" } else { t }
}

fn path_tokens(parts: &[String], out: &mut Vec<String>) {
    for k in 2..=parts.len() {
        out.push(parts[..k].join("-"));
    }
}

/// Every number expression of a normalised text, left to right.
pub fn find(text: &str) -> Vec<NumberExpr> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let Some(c) = text[i..].chars().next() else {
            break;
        };
        let prev = text[..i].chars().next_back();
        let word_before = prev.is_some_and(|p| p.is_alphanumeric() && !is_cjk(p));
        let parsed = if c == '第' || c == '§' {
            parse(text, i, c.len_utf8(), c == '第')
        } else if is_digit(c) && !word_before && !prev.is_some_and(is_digit) {
            parse(text, i, 0, false)
        } else {
            None
        };
        match parsed {
            Some(expr) => {
                i = expr.end;
                out.push(expr);
            }
            None => i += c.len_utf8(),
        }
    }
    out
}

fn is_cjk(c: char) -> bool {
    matches!(
        crate::chars::class(c),
        crate::chars::CharClass::Kanji
            | crate::chars::CharClass::Hiragana
            | crate::chars::CharClass::Katakana
    )
}

/// Parses an expression starting at `start`; `prefix` bytes are 第/§.
fn parse(text: &str, start: usize, prefix: usize, dai: bool) -> Option<NumberExpr> {
    let mut pos = start + prefix;
    if prefix > 0 {
        pos = skip_space(text, pos);
    }
    let (mut before, used): (Vec<String>, usize) = {
        let (parts, used) = digit_parts(&text[pos..]);
        if used > 0 {
            (
                parts.iter().map(|p| canonical(p).to_string()).collect(),
                used,
            )
        } else if dai {
            let (value, used) = kanji_number(&text[pos..])?;
            (vec![value.to_string()], used)
        } else {
            return None;
        }
    };
    pos += used;
    let counter_pos = skip_space(text, pos);
    let counter = counter_at(&text[counter_pos..]);
    let mut tokens = Vec::new();
    let end;
    match counter {
        Some(counter) => {
            pos = counter_pos + counter.len();
            // Parts after the counter: 第2章-1-1.
            let mut after: Vec<String> = Vec::new();
            if let Some(sep) = text[pos..]
                .chars()
                .next()
                .filter(|c| matches!(c, '-' | '.'))
                && text[pos + sep.len_utf8()..]
                    .chars()
                    .next()
                    .is_some_and(is_digit)
            {
                let (parts, used) = digit_parts(&text[pos + sep.len_utf8()..]);
                if used > 0 {
                    after = parts.iter().map(|p| canonical(p).to_string()).collect();
                    pos += sep.len_utf8() + used;
                }
            }
            end = pos;
            let base = format!("{}{counter}", before.join("-"));
            let mut all = before.clone();
            all.extend(after.iter().cloned());
            // General to specific: the path without the counter, then the
            // counted number and its sub-numbers.
            if all.len() >= 2 {
                path_tokens(&all, &mut tokens);
            }
            tokens.push(base.clone());
            for k in 1..=after.len() {
                tokens.push(format!("{base}-{}", after[..k].join("-")));
            }
        }
        None => {
            end = pos;
            if prefix > 0 && !dai && before.len() == 1 {
                // §4 names a section even without a separator.
                before.insert(0, "§".to_string());
                tokens.push(before.concat());
            } else if before.len() >= 2 {
                path_tokens(&before, &mut tokens);
            }
        }
    }
    if tokens.is_empty() {
        return None;
    }
    Some(NumberExpr { start, end, tokens })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(text: &str) -> Vec<Vec<String>> {
        find(text).into_iter().map(|e| e.tokens).collect()
    }

    #[test]
    fn chapter_numbers_keep_their_sub_numbers_apart() {
        assert_eq!(tokens("第2章-1"), [["2-1", "2章", "2章-1"]]);
        assert_eq!(tokens("第2章-2"), [["2-2", "2章", "2章-2"]]);
        assert_eq!(
            tokens("第 2 章-1-1 入院"),
            [["2-1", "2-1-1", "2章", "2章-1", "2章-1-1"]]
        );
        let a = find("第2章-1");
        let b = find("第2章-2");
        assert_ne!(a[0].specific(), b[0].specific());
    }

    #[test]
    fn articles_kanji_numerals_and_leading_zeros_agree() {
        assert_eq!(tokens("第3条"), [["3条"]]);
        assert_eq!(tokens("第三条"), [["3条"]]);
        assert_eq!(tokens("第十二条"), [["12条"]]);
        assert_eq!(tokens("第03条"), [["3条"]]);
        assert_eq!(tokens("第1章はじめに"), [["1章"]]);
    }

    #[test]
    fn separated_numbers_and_section_signs() {
        assert_eq!(tokens("表 2-1 を参照"), [["2-1"]]);
        assert_eq!(tokens("see section 4.2 and §4.2"), [["4-2"], ["4-2"]]);
        assert_eq!(tokens("§7"), [["§7"]]);
        assert_eq!(tokens("php 7.4"), [["7-4"]]);
    }

    #[test]
    fn counted_quantities_become_tokens() {
        assert_eq!(tokens("60日以内に"), [["60日"]]);
        assert_eq!(tokens("5年ごと"), [["5年"]]);
        assert_eq!(tokens("3か月"), [["3か月"]]);
    }

    #[test]
    fn plain_numbers_identifiers_and_words_are_not_expressions() {
        assert!(find("2024").is_empty());
        assert!(find("k867 v1.2").is_empty());
        assert!(find("1234567-1").is_empty());
        assert!(find("第").is_empty());
        assert!(find("第二").is_empty());
        let e = &find("入院は第3条による")[0];
        assert_eq!(&"入院は第3条による"[e.start..e.end], "第3条");
    }
}
