//! Query analysis: the same tokenisation as the index, grouped into
//! "concepts" for coverage, with weights for function-word-like tokens.
//!
//! * Quoted phrases (`"…"`, `「…」`, `『…』`) are required: a candidate must
//!   contain them (the filter is relaxed when it would leave nothing).
//! * Question fillers (`教えてください`, `について`, `ですか` …) are dropped.
//! * A CJK run is split into content chunks (maximal kanji/katakana
//!   sequences); each chunk is a group whose terms are its bigrams (or its
//!   single kanji). Bigrams that straddle kana are "glue" terms with a low
//!   weight; hiragana-only bigrams get a low weight unless rare (decided at
//!   scoring time from document frequency).
//! * Each non-stop word of other scripts is a group of its stemmed form.

use crate::text;
use crate::tokenize::{self, CharClass, TokenKind};

/// Japanese question fillers removed from queries (normalised form).
const FILLERS: &[&str] = &[
    "について教えてください",
    "について教えて",
    "を教えてください",
    "を教えて",
    "教えてください",
    "教えて",
    "知りたいです",
    "知りたい",
    "でしょうか",
    "ですか",
    "ますか",
    "ください",
    "下さい",
];

/// English words that never form a concept of their own.
const STOP_WORDS: &[&str] = &[
    "a", "an", "the", "of", "to", "in", "on", "for", "and", "or", "is", "are", "be", "how", "do",
    "doe", "does", "i", "what", "which", "when", "where", "why", "can", "my", "me", "it", "its",
    "this", "that", "with", "from", "by", "as", "at", "should", "there", "about", "we", "you",
    "your", "did", "if", "get", "was", "will", "would", "want", "need", "happen",
];

/// How a query term contributes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum TermRole {
    /// Part of a concept group (full weight).
    Content,
    /// A bigram straddling kana and kanji (low weight).
    Glue,
    /// A hiragana-only bigram (weight decided by rarity).
    Kana,
    /// An English stop word (tiny weight).
    Stop,
}

/// One distinct query term.
#[derive(Debug, Clone)]
pub(crate) struct QueryTerm {
    /// The token text (as in the index).
    pub text: String,
    /// Its role.
    pub role: TermRole,
    /// The groups it belongs to.
    pub groups: Vec<usize>,
}

/// A concept of the query (a content chunk or a word).
#[derive(Debug, Clone)]
pub(crate) struct QueryGroup {
    /// The chunk/word text in normal form.
    pub text: String,
    /// Number of distinct terms in the group.
    pub term_count: usize,
    /// Whether the group comes from a quoted (required) phrase.
    pub required: bool,
}

/// The analysed query.
#[derive(Debug, Clone, Default)]
pub(crate) struct QueryPlan {
    /// The whole query in normal form (cache key, facet detection).
    pub normalized: String,
    /// Distinct terms.
    pub terms: Vec<QueryTerm>,
    /// Concept groups.
    pub groups: Vec<QueryGroup>,
    /// Required phrases (normal form).
    pub required: Vec<String>,
}

impl QueryPlan {
    /// Whether the query has nothing searchable.
    pub(crate) fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }
}

/// Analyses a raw query.
pub(crate) fn analyze(raw: &str) -> QueryPlan {
    let (phrases, rest) = split_quoted(raw);
    let mut plan = QueryPlan {
        normalized: text::normalize(raw),
        ..QueryPlan::default()
    };
    for phrase in phrases {
        let norm = text::normalize(&phrase);
        if norm.is_empty() {
            continue;
        }
        let first_group = plan.groups.len();
        add_text(&mut plan, &norm);
        for g in &mut plan.groups[first_group..] {
            g.required = true;
        }
        plan.required.push(norm);
    }
    let mut norm = text::normalize(&rest);
    for filler in FILLERS {
        norm = norm.replace(filler, " ");
    }
    add_text(&mut plan, &norm);
    plan
}

/// Splits quoted phrases from the rest of the query.
fn split_quoted(raw: &str) -> (Vec<String>, String) {
    let mut phrases = Vec::new();
    let mut rest = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        let close = match c {
            '"' => '"',
            '「' => '」',
            '『' => '』',
            '“' => '”',
            _ => {
                rest.push(c);
                continue;
            }
        };
        let phrase: String = chars.by_ref().take_while(|&x| x != close).collect();
        if !phrase.trim().is_empty() {
            phrases.push(phrase);
        }
        rest.push(' ');
    }
    (phrases, rest)
}

fn add_text(plan: &mut QueryPlan, norm: &str) {
    let chars: Vec<char> = norm.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let cls = tokenize::class(chars[i]);
        let mut j = i + 1;
        match cls {
            CharClass::Kanji | CharClass::Hiragana | CharClass::Katakana => {
                while j < chars.len() && is_cjk(chars[j]) {
                    j += 1;
                }
                add_cjk_run(plan, &chars[i..j]);
            }
            CharClass::Word => {
                while j < chars.len() && tokenize::class(chars[j]) == CharClass::Word {
                    j += 1;
                }
                let word: String = chars[i..j].iter().collect();
                add_word(plan, &word);
            }
            CharClass::Other => {}
        }
        i = j;
    }
}

fn is_cjk(c: char) -> bool {
    matches!(
        tokenize::class(c),
        CharClass::Kanji | CharClass::Hiragana | CharClass::Katakana
    )
}

fn add_cjk_run(plan: &mut QueryPlan, run: &[char]) {
    let hira: Vec<bool> = run
        .iter()
        .map(|c| tokenize::class(*c) == CharClass::Hiragana)
        .collect();
    // Content chunks: maximal non-hiragana stretches.
    let mut k = 0;
    let mut any_chunk = false;
    while k < run.len() {
        if hira[k] {
            k += 1;
            continue;
        }
        let start = k;
        while k < run.len() && !hira[k] {
            k += 1;
        }
        any_chunk = true;
        let chunk = &run[start..k];
        let group = new_group(plan, chunk.iter().collect());
        if chunk.len() == 1 {
            if tokenize::class(chunk[0]) == CharClass::Kanji {
                add_term(plan, chunk[0].to_string(), TermRole::Content, Some(group));
            }
        } else {
            for pair in chunk.windows(2) {
                add_term(plan, pair.iter().collect(), TermRole::Content, Some(group));
            }
        }
        finish_group(plan, group);
    }
    // Bigrams touching kana.
    let kana_group = if !any_chunk && run.len() >= 2 {
        Some(new_group(plan, run.iter().collect()))
    } else {
        None
    };
    for (idx, pair) in run.windows(2).enumerate() {
        let role = match (hira[idx], hira[idx + 1]) {
            (false, false) => continue,
            (true, true) => TermRole::Kana,
            _ => TermRole::Glue,
        };
        add_term(plan, pair.iter().collect(), role, kana_group);
    }
    if let Some(group) = kana_group {
        finish_group(plan, group);
    }
}

fn add_word(plan: &mut QueryPlan, word: &str) {
    let mut tokens: Vec<String> = Vec::new();
    tokenize::for_each_token(word, |t, kind| {
        if kind == TokenKind::Word {
            tokens.push(t.to_string());
        }
    });
    let Some((main, parts)) = tokens.split_first() else {
        return;
    };
    if STOP_WORDS.contains(&word) || STOP_WORDS.contains(&main.as_str()) {
        add_term(plan, main.clone(), TermRole::Stop, None);
        return;
    }
    let group = new_group(plan, word.to_string());
    add_term(plan, main.clone(), TermRole::Content, Some(group));
    for part in parts {
        add_term(plan, part.clone(), TermRole::Glue, None);
    }
    finish_group(plan, group);
}

fn new_group(plan: &mut QueryPlan, text: String) -> usize {
    plan.groups.push(QueryGroup {
        text,
        term_count: 0,
        required: false,
    });
    plan.groups.len() - 1
}

fn finish_group(plan: &mut QueryPlan, group: usize) {
    let count = plan.terms.iter().filter(|t| t.groups.contains(&group)).count();
    if let Some(g) = plan.groups.get_mut(group) {
        g.term_count = count;
    }
}

fn add_term(plan: &mut QueryPlan, text: String, role: TermRole, group: Option<usize>) {
    if let Some(existing) = plan.terms.iter_mut().find(|t| t.text == text) {
        if rank(role) > rank(existing.role) {
            existing.role = role;
        }
        if let Some(g) = group {
            if !existing.groups.contains(&g) {
                existing.groups.push(g);
            }
        }
        return;
    }
    plan.terms.push(QueryTerm {
        text,
        role,
        groups: group.into_iter().collect(),
    });
}

fn rank(role: TermRole) -> u8 {
    match role {
        TermRole::Content => 3,
        TermRole::Glue => 2,
        TermRole::Kana => 1,
        TermRole::Stop => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group_texts(plan: &QueryPlan) -> Vec<&str> {
        plan.groups.iter().map(|g| g.text.as_str()).collect()
    }

    #[test]
    fn japanese_query_groups_content_chunks() {
        let plan = analyze("病気で入院したときの給付金について教えてください");
        assert_eq!(group_texts(&plan), ["病気", "入院", "給付金"]);
        let role = |t: &str| plan.terms.iter().find(|x| x.text == t).map(|x| x.role);
        assert_eq!(role("入院"), Some(TermRole::Content));
        assert_eq!(role("給付"), Some(TermRole::Content));
        assert_eq!(role("院し"), Some(TermRole::Glue));
        assert_eq!(role("した"), Some(TermRole::Kana));
        assert_eq!(role("教え"), None);
    }

    #[test]
    fn quoted_phrases_are_required_and_stop_words_are_not_groups() {
        let plan = analyze("how do I \"rotate keys\" in the API");
        assert_eq!(plan.required, ["rotate keys"]);
        assert_eq!(group_texts(&plan), ["rotate", "keys", "api"]);
        assert!(plan.groups[0].required && plan.groups[1].required && !plan.groups[2].required);
    }

    #[test]
    fn single_kanji_and_kana_only_queries_are_searchable() {
        let plan = analyze("額");
        assert_eq!(plan.terms.len(), 1);
        let plan = analyze("がん");
        assert_eq!(group_texts(&plan), ["がん"]);
        assert!(!plan.is_empty());
    }
}

/// The stage-4 "loose" variant of a plan: every kanji of a multi-character
/// concept also matches on its own, so partial wordings still find sections.
pub(crate) fn loosen(plan: &QueryPlan) -> QueryPlan {
    let mut loose = plan.clone();
    for (g, group) in plan.groups.iter().enumerate() {
        if group.text.chars().count() < 2 {
            continue;
        }
        for c in group.text.chars() {
            if tokenize::class(c) == CharClass::Kanji {
                add_term(&mut loose, c.to_string(), TermRole::Content, Some(g));
            }
        }
        finish_group(&mut loose, g);
    }
    loose
}
