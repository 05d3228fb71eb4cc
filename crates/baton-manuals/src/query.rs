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

use crate::synonyms::Thesaurus;
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

/// Hiragana bigrams of Japanese grammar rather than content: polite and
/// copula endings (ます, です), past/te/conditional forms (した, たら, ても),
/// negation (ない, せん), auxiliaries (たい, れる, られ, いる, ある, なる),
/// request forms (くだ, ださ), conjunctions and formal nouns (から, ので,
/// けど, まで, など, こと, とき, ため, よう). Colloquial questions are full of
/// them while formal manuals rarely contain them, so they must never count
/// as rare content: they are stop terms. The list comes from grammar, not
/// from any evaluation query.
const FUNCTION_BIGRAMS: &[&str] = &[
    "ます", "ませ", "まし", "です", "でし", "すか", "しょ", "ょう", "した", "して", "しま", "った",
    "って", "たら", "だら", "ても", "でも", "ては", "ない", "なく", "なか", "せん", "たい", "たく",
    "れる", "られ", "れば", "れた", "いる", "いま", "いた", "ある", "あり", "なる", "なり", "なっ",
    "する", "すれ", "さい", "くだ", "ださ", "から", "ので", "のに", "けど", "けれ", "まで", "など",
    "だけ", "より", "こと", "もの", "とき", "ため", "よう", "のか", "んで", "んだ", "かな", "ばい",
    "いい",
];

/// Hiragana particles: a kanji followed by one of these is a noun.
const PARTICLES: &[char] = &[
    'の', 'は', 'が', 'を', 'に', 'で', 'と', 'も', 'や', 'へ', 'か', 'な',
];

/// English words that never form a concept of their own (question words
/// and verbs of asking; [`SNOWBALL_STOP_WORDS`] are stop words too).
const STOP_WORDS: &[&str] = &[
    "a", "an", "the", "of", "to", "in", "on", "for", "and", "or", "is", "are", "be", "how", "do",
    "doe", "does", "i", "what", "which", "when", "where", "why", "can", "my", "me", "it", "its",
    "this", "that", "with", "from", "by", "as", "at", "should", "there", "about", "we", "you",
    "your", "did", "if", "get", "was", "will", "would", "want", "need", "happen",
];

/// The Snowball English stop-word list (a standard list, used as is).
const SNOWBALL_STOP_WORDS: &[&str] = &[
    "i",
    "me",
    "my",
    "myself",
    "we",
    "our",
    "ours",
    "ourselves",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
    "he",
    "him",
    "his",
    "himself",
    "she",
    "her",
    "hers",
    "herself",
    "it",
    "its",
    "itself",
    "they",
    "them",
    "their",
    "theirs",
    "themselves",
    "what",
    "which",
    "who",
    "whom",
    "this",
    "that",
    "these",
    "those",
    "am",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "being",
    "have",
    "has",
    "had",
    "having",
    "do",
    "does",
    "did",
    "doing",
    "would",
    "should",
    "could",
    "ought",
    "a",
    "an",
    "the",
    "and",
    "but",
    "if",
    "or",
    "because",
    "as",
    "until",
    "while",
    "of",
    "at",
    "by",
    "for",
    "with",
    "about",
    "against",
    "between",
    "into",
    "through",
    "during",
    "before",
    "after",
    "above",
    "below",
    "to",
    "from",
    "up",
    "down",
    "in",
    "out",
    "on",
    "off",
    "over",
    "under",
    "again",
    "further",
    "then",
    "once",
    "here",
    "there",
    "when",
    "where",
    "why",
    "how",
    "all",
    "any",
    "both",
    "each",
    "few",
    "more",
    "most",
    "other",
    "some",
    "such",
    "no",
    "nor",
    "not",
    "only",
    "own",
    "same",
    "so",
    "than",
    "too",
    "very",
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
    /// A single kanji of a multi-character concept (unigram backoff).
    Backoff,
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
    /// The concept this group spells: its own index, or the index of the
    /// group it is a thesaurus alternative of.
    pub concept: usize,
    /// Whether the group is a thesaurus alternative (not typed by the user).
    pub alternative: bool,
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

/// Analyses a raw query, expanding everyday words with `thesaurus`.
pub(crate) fn analyze(raw: &str, thesaurus: &Thesaurus) -> QueryPlan {
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
        add_text(&mut plan, &norm, None);
        for g in &mut plan.groups[first_group..] {
            g.required = true;
        }
        plan.required.push(norm);
    }
    let mut norm = text::normalize(&rest);
    for filler in FILLERS {
        norm = norm.replace(filler, " ");
    }
    add_text(&mut plan, &norm, None);
    for (key, alternatives) in thesaurus.expansions(&norm) {
        let mut concept = plan
            .groups
            .iter()
            .find(|g| {
                !g.required
                    && !g.alternative
                    && (key.contains(g.text.as_str()) || g.text.contains(key))
            })
            .map(|g| g.concept);
        for alt in alternatives {
            let first = plan.groups.len();
            add_text(&mut plan, alt, Some(concept.unwrap_or(first)));
            if plan.groups.len() > first {
                concept.get_or_insert(first);
            }
        }
    }
    plan
}

impl QueryPlan {
    /// The concepts: for each, its groups and whether a user-typed group spells it.
    pub(crate) fn concepts(&self) -> Vec<(Vec<usize>, bool)> {
        let mut out: Vec<(usize, Vec<usize>, bool)> = Vec::new();
        for (g, group) in self.groups.iter().enumerate() {
            match out.iter_mut().find(|(c, _, _)| *c == group.concept) {
                Some((_, groups, typed)) => {
                    groups.push(g);
                    *typed |= !group.alternative;
                }
                None => out.push((group.concept, vec![g], !group.alternative)),
            }
        }
        out.into_iter().map(|(_, g, t)| (g, t)).collect()
    }
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

/// Adds the terms of a normalised text. With `alternative_of`, the text is a
/// thesaurus alternative: its groups join that concept and only content
/// terms are added.
fn add_text(plan: &mut QueryPlan, norm: &str, alternative_of: Option<usize>) {
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
                add_cjk_run(plan, &chars[i..j], alternative_of);
            }
            CharClass::Word => {
                while j < chars.len() && tokenize::class(chars[j]) == CharClass::Word {
                    j += 1;
                }
                let word: String = chars[i..j].iter().collect();
                add_word(plan, &word, alternative_of);
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

fn add_cjk_run(plan: &mut QueryPlan, run: &[char], alternative_of: Option<usize>) {
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
        let chunk = &run[start..k];
        // A lone kanji followed by okurigana (見つかる, 込む) is a verb or
        // adjective stem: a weak term that forms no concept of its own.
        let okurigana = run.get(k).is_some_and(|c| !PARTICLES.contains(c));
        if chunk.len() == 1 && okurigana && alternative_of.is_none() && start > 0 {
            if tokenize::class(chunk[0]) == CharClass::Kanji {
                add_term(plan, chunk[0].to_string(), TermRole::Glue, None);
            }
            continue;
        }
        any_chunk = true;
        let group = new_group(plan, chunk.iter().collect(), alternative_of);
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
        // Backoff: each kanji of a multi-character concept also matches on
        // its own, with a low weight and no share in the concept's coverage
        // (character-unigram backoff of bigram indexing). Backoff terms only
        // rescore sections found by other terms; they add no candidates.
        if chunk.len() > 1 {
            for &c in chunk {
                if tokenize::class(c) == CharClass::Kanji {
                    add_term(plan, c.to_string(), TermRole::Backoff, None);
                }
            }
        }
    }
    // Bigrams touching kana.
    if alternative_of.is_some() && any_chunk {
        return;
    }
    let kana_group = if !any_chunk && run.len() >= 2 {
        Some(new_group(plan, run.iter().collect(), alternative_of))
    } else {
        None
    };
    for (idx, pair) in run.windows(2).enumerate() {
        let role = match (hira[idx], hira[idx + 1]) {
            (false, false) => continue,
            (true, true) if FUNCTION_BIGRAMS.contains(&pair_text(pair).as_str()) => TermRole::Stop,
            (true, true) => TermRole::Kana,
            _ => TermRole::Glue,
        };
        add_term(plan, pair.iter().collect(), role, kana_group);
    }
    if let Some(group) = kana_group {
        finish_group(plan, group);
    }
}

fn pair_text(pair: &[char]) -> String {
    pair.iter().collect()
}

fn add_word(plan: &mut QueryPlan, word: &str, alternative_of: Option<usize>) {
    let mut tokens: Vec<String> = Vec::new();
    tokenize::for_each_token(word, |t, kind| {
        if kind == TokenKind::Word {
            tokens.push(t.to_string());
        }
    });
    let Some((main, parts)) = tokens.split_first() else {
        return;
    };
    let single_digit = word.len() == 1 && word.bytes().all(|b| b.is_ascii_digit());
    let stop = |w: &str| STOP_WORDS.contains(&w) || SNOWBALL_STOP_WORDS.contains(&w);
    if stop(word) || stop(main.as_str()) || single_digit {
        add_term(plan, main.clone(), TermRole::Stop, None);
        return;
    }
    let group = new_group(plan, word.to_string(), alternative_of);
    add_term(plan, main.clone(), TermRole::Content, Some(group));
    for part in parts {
        add_term(plan, part.clone(), TermRole::Glue, None);
    }
    finish_group(plan, group);
}

fn new_group(plan: &mut QueryPlan, text: String, alternative_of: Option<usize>) -> usize {
    let index = plan.groups.len();
    plan.groups.push(QueryGroup {
        text,
        term_count: 0,
        required: false,
        concept: alternative_of.unwrap_or(index),
        alternative: alternative_of.is_some(),
    });
    index
}

fn finish_group(plan: &mut QueryPlan, group: usize) {
    let count = plan
        .terms
        .iter()
        .filter(|t| t.groups.contains(&group))
        .count();
    if let Some(g) = plan.groups.get_mut(group) {
        g.term_count = count;
    }
}

fn add_term(plan: &mut QueryPlan, text: String, role: TermRole, group: Option<usize>) {
    if let Some(existing) = plan.terms.iter_mut().find(|t| t.text == text) {
        if rank(role) > rank(existing.role) {
            existing.role = role;
        }
        if let Some(g) = group
            && !existing.groups.contains(&g)
        {
            existing.groups.push(g);
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
        TermRole::Content => 4,
        TermRole::Glue => 3,
        TermRole::Backoff => 2,
        TermRole::Kana => 1,
        TermRole::Stop => 0,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn group_texts(plan: &QueryPlan) -> Vec<&str> {
        plan.groups
            .iter()
            .filter(|g| !g.alternative)
            .map(|g| g.text.as_str())
            .collect()
    }

    #[test]
    fn thesaurus_alternatives_join_the_typed_concept() {
        let plan = analyze("病気で入院", &Thesaurus::builtin());
        let concepts = plan.concepts();
        assert_eq!(concepts.len(), 2);
        let sick = &concepts[0].0;
        let texts: Vec<&str> = sick.iter().map(|g| plan.groups[*g].text.as_str()).collect();
        assert_eq!(texts, ["病気", "疾病"]);
        assert!(plan.terms.iter().any(|t| t.text == "疾病"));
    }

    #[test]
    fn japanese_query_groups_content_chunks() {
        let plan = analyze(
            "病気で入院したときの給付金について教えてください",
            &Thesaurus::builtin(),
        );
        assert_eq!(group_texts(&plan), ["病気", "入院", "給付金"]);
        let role = |t: &str| plan.terms.iter().find(|x| x.text == t).map(|x| x.role);
        assert_eq!(role("入院"), Some(TermRole::Content));
        assert_eq!(role("給付"), Some(TermRole::Content));
        assert_eq!(role("院し"), Some(TermRole::Glue));
        assert_eq!(role("した"), Some(TermRole::Stop));
        assert_eq!(role("教え"), None);
    }

    #[test]
    fn quoted_phrases_are_required_and_stop_words_are_not_groups() {
        let plan = analyze("how do I \"rotate keys\" in the API", &Thesaurus::builtin());
        assert_eq!(plan.required, ["rotate keys"]);
        assert_eq!(group_texts(&plan), ["rotate", "keys", "api"]);
        assert!(plan.groups[0].required && plan.groups[1].required && !plan.groups[2].required);
    }

    #[test]
    fn grammar_bigrams_are_stop_terms_and_kanji_back_off_to_unigrams() {
        let plan = analyze("やめたら戻ってくるお金", &Thesaurus::builtin());
        let role = |t: &str| plan.terms.iter().find(|x| x.text == t).map(|x| x.role);
        assert_eq!(role("たら"), Some(TermRole::Stop));
        assert_eq!(role("やめ"), Some(TermRole::Kana));
        let plan = analyze("両目の視力", &Thesaurus::builtin());
        let role = |t: &str| plan.terms.iter().find(|x| x.text == t).map(|x| x.role);
        assert_eq!(role("両目"), Some(TermRole::Content));
        assert_eq!(role("両"), Some(TermRole::Backoff));
        assert_eq!(group_texts(&plan), ["両目", "視力"]);
        let plan = analyze(
            "what if they restore it after the upgrade",
            &Thesaurus::builtin(),
        );
        assert_eq!(group_texts(&plan), ["restore", "upgrade"]);
    }

    #[test]
    fn single_kanji_and_kana_only_queries_are_searchable() {
        let plan = analyze("額", &Thesaurus::builtin());
        assert_eq!(plan.terms.len(), 1);
        let plan = analyze("がん", &Thesaurus::builtin());
        assert_eq!(group_texts(&plan), ["がん"]);
        assert!(!plan.is_empty());
    }
}
