//! Search terms of a run: the manual search's tokenizer (Japanese bigrams,
//! stemmed English words), minus terms that carry no topic, weighted by
//! where they occur, capped per document.

use std::collections::HashMap;

/// At most this many distinct terms are kept per run (the heaviest).
pub const MAX_DOC_TERMS: usize = 96;
/// At most this many distinct query terms are scored (the heaviest).
pub const MAX_QUERY_TERMS: usize = 64;
/// Request text read for terms, in bytes.
pub const REQUEST_BYTES: usize = 8 * 1024;
/// Design text read for terms, in bytes.
pub const DESIGN_BYTES: usize = 16 * 1024;
/// A request term counts this many times (the design's count once).
pub const REQUEST_WEIGHT: u32 = 2;

/// English words too common to say what a run was about.
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been",
    "but", "by", "can", "do", "doe", "each", "for", "from", "had", "has", "have", "how", "if",
    "in", "into", "is", "it", "its", "may", "more", "must", "no", "not", "of", "on", "one", "or",
    "other", "our", "out", "over", "shall", "should", "so", "some", "such", "than", "that", "the",
    "their", "them", "then", "there", "these", "they", "thi", "this", "those", "to", "up", "us",
    "use", "was", "we", "were", "what", "when", "where", "which", "while", "who", "will", "with",
    "would", "you", "your",
];

/// Whether a tokenizer term is worth indexing: two characters or more, not
/// only digits, not only hiragana (grammar: `する`, `ます`), not a stopword.
pub fn is_topical(term: &str) -> bool {
    if term.chars().nth(1).is_none() {
        return false;
    }
    if term.chars().all(|c| c.is_ascii_digit()) {
        return false;
    }
    if term.chars().all(|c| ('\u{3041}'..='\u{309F}').contains(&c)) {
        return false;
    }
    !STOPWORDS.contains(&term)
}

/// The topical terms of `text`, in order, repeats kept.
pub fn topical_terms(text: &str) -> Vec<String> {
    baton_text::index_terms(text)
        .into_iter()
        .filter(|t| is_topical(t))
        .collect()
}

/// Weighted term counts of a request and a design: request terms count
/// [`REQUEST_WEIGHT`] times. Returns the heaviest `cap` terms (ties by
/// term, so the choice is deterministic) and the total weight before the
/// cap.
pub fn weighted_terms(request: &str, design: &str, cap: usize) -> (Vec<(String, u32)>, u32) {
    let mut counts: HashMap<String, u32> = HashMap::new();
    for t in topical_terms(head(request, REQUEST_BYTES)) {
        *counts.entry(t).or_default() += REQUEST_WEIGHT;
    }
    for t in topical_terms(head(design, DESIGN_BYTES)) {
        *counts.entry(t).or_default() += 1;
    }
    let total = counts.values().fold(0u32, |a, n| a.saturating_add(*n));
    let mut terms: Vec<(String, u32)> = counts.into_iter().collect();
    terms.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    terms.truncate(cap);
    terms.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    (terms, total)
}

/// The first `max` bytes of `text`, cut at a character boundary.
pub fn head(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Words of `query` a person recognises for a set of matched terms, best
/// first: a word (a run of letters/digits) whose own terms matched, or a
/// stretch of CJK text covered by matched bigrams (`タイムアウト` rather
/// than `タイ`, `イム`, …). `weight` ranks terms (their share of the score).
pub fn reason_words(query: &str, weight: &dyn Fn(&str) -> f64, max: usize) -> Vec<String> {
    let mut found: Vec<(String, f64)> = Vec::new();
    let mut checked: std::collections::HashSet<String> = std::collections::HashSet::new();
    fn push(found: &mut Vec<(String, f64)>, word: String, w: f64) {
        if w <= 0.0 {
            return;
        }
        match found.iter_mut().find(|(x, _)| *x == word) {
            Some(entry) => entry.1 = entry.1.max(w),
            None => found.push((word, w)),
        }
    }
    let chars: Vec<char> = query.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if is_cjk(c) {
            // A CJK run: mark characters covered by a matched bigram.
            let start = i;
            while i < chars.len() && is_cjk(chars[i]) {
                i += 1;
            }
            let run = &chars[start..i];
            let mut covered = vec![0.0f64; run.len()];
            for j in 0..run.len().saturating_sub(1) {
                let bigram: String = run[j..j + 2].iter().collect();
                let w = index_weight(&bigram, weight);
                if w > 0.0 {
                    covered[j] += w;
                    covered[j + 1] += w;
                }
            }
            let mut j = 0;
            while j < run.len() {
                if covered[j] > 0.0 {
                    let from = j;
                    let mut w = 0.0;
                    while j < run.len() && covered[j] > 0.0 {
                        w += covered[j];
                        j += 1;
                    }
                    if j - from >= 2 {
                        push(&mut found, run[from..j].iter().collect(), w / 2.0);
                    }
                } else {
                    j += 1;
                }
            }
        } else if c.is_alphanumeric() {
            let start = i;
            while i < chars.len() && chars[i].is_alphanumeric() && !is_cjk(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect::<String>().to_lowercase();
            if !checked.insert(word.clone()) {
                continue;
            }
            let w: f64 = baton_text::index_terms(&word)
                .iter()
                .map(|t| weight(t))
                .fold(0.0, f64::max);
            push(&mut found, word, w);
        } else {
            i += 1;
        }
    }
    found.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    found.truncate(max);
    found.into_iter().map(|(w, _)| w).collect()
}

/// The weight of a raw bigram after normalisation (full-width forms).
fn index_weight(bigram: &str, weight: &dyn Fn(&str) -> f64) -> f64 {
    baton_text::index_terms(bigram)
        .iter()
        .filter(|t| t.chars().count() == 2)
        .map(|t| weight(t))
        .fold(0.0, f64::max)
}

fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{3041}'..='\u{309F}'
        | '\u{30A0}'..='\u{30FF}'
        | '\u{31F0}'..='\u{31FF}'
        | '\u{3400}'..='\u{4DBF}'
        | '\u{4E00}'..='\u{9FFF}'
        | '\u{F900}'..='\u{FAFF}'
        | '\u{AC00}'..='\u{D7AF}'
        | '々' | '〆' | '〇')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topical_terms_drop_grammar_and_stopwords() {
        let terms = topical_terms("Fix the login timeout in 3 places");
        assert_eq!(terms, ["fix", "login", "timeout", "places"]);
        let ja = topical_terms("ログインのタイムアウトを修正する");
        assert!(ja.contains(&"ログ".to_string()) && ja.contains(&"修正".to_string()));
        assert!(
            !ja.contains(&"する".to_string()),
            "hiragana-only bigrams carry no topic"
        );
        assert!(!ja.iter().any(|t| t.chars().count() < 2));
    }

    #[test]
    fn request_terms_weigh_double_and_the_cap_keeps_the_heaviest() {
        let (terms, total) = weighted_terms("cache cache", "cache eviction policy", 2);
        assert_eq!(total, 2 * 2 + 3);
        assert_eq!(
            terms,
            [("cach".to_string(), 5), ("eviction".to_string(), 1)]
        );
    }

    #[test]
    fn reasons_are_words_and_cjk_stretches() {
        let matched = ["timeout", "ログ", "グイ", "イン"];
        let weight = |t: &str| {
            if matched.contains(&t) { 1.0 } else { 0.0 }
        };
        let words = reason_words("ログイン画面の Timeouts", &weight, 5);
        assert_eq!(words, ["ログイン", "timeouts"]);
    }

    #[test]
    fn head_cuts_at_char_boundaries() {
        assert_eq!(head("日本語", 4), "日");
        assert_eq!(head("abc", 10), "abc");
    }
}
