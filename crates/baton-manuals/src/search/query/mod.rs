//! Query analysis: the same tokenisation as the index, grouped into
//! "concepts" for coverage, with weights for function-word-like tokens.
//!
//! * Quoted phrases (`"…"`, `「…」`, `『…』`) and the caller's
//!   `required_terms` are required: a candidate must contain them (a soft
//!   filter, relaxed when it would leave nothing).
//! * Question fillers (`教えてください`, `について`, `ですか` …) are dropped.
//! * Number expressions (`第2章-1`, `第3条`, `4.2`, `60日`) are concepts
//!   named by their number tokens ([`baton_text::numbers`]).
//! * A CJK run is split into concepts ([`japanese`]): kanji/katakana chunks
//!   and mixed-script names (`がん保険`, `抗がん剤`); each is a group whose
//!   terms are its bigrams (or its single kanji). Bigrams that straddle
//!   kana elsewhere are "glue" terms with a low weight; hiragana-only
//!   bigrams get a low weight unless rare (decided at scoring time).
//! * Each non-stop word of other scripts is a group of its stemmed form.
//! * Label words (`定義`, `手順`, `条件`, `例外`, `比較` …) standing as a
//!   concept of their own are intent, not content: they keep a tiny weight
//!   and no share in coverage (the claim graph reads them as facets).

mod japanese;
mod lists;
mod required;

use baton_text::chars::{self, CharClass};
use baton_text::normalize as text;
use baton_text::thesaurus::Thesaurus;
use baton_text::tokenize::{self, TokenKind};
use japanese::UnitKind;
use lists::{FILLERS, FUNCTION_BIGRAMS, LABEL_WORDS, SNOWBALL_STOP_WORDS, STOP_WORDS};

/// Query terms beyond this are not searched (the analyser orders them by
/// importance and keeps this many; one bit each in a hit).
pub(crate) const MAX_TERMS: usize = 64;

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
    /// An English stop word or a grammar bigram (tiny weight).
    Stop,
    /// A label word read as intent (`定義`, `手順`; tiny weight, no coverage).
    Label,
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
    /// Whether the group is a label word read as intent (no coverage share).
    pub label: bool,
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
    /// Required phrases and terms (normal form): each entry is satisfied
    /// by any of its spellings (a quoted phrase has one; a required term
    /// also its okurigana variants, 申し込み → 申込み, 申込).
    pub required: Vec<Vec<String>>,
    /// How many of [`Self::required`] come from the caller's
    /// `required_terms` (the last ones); the others are quoted phrases.
    pub required_terms: usize,
}

impl QueryPlan {
    /// Whether the query has nothing searchable.
    pub(crate) fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }
}

/// Analyses a raw query, expanding everyday words with `thesaurus`.
pub(crate) fn analyze(raw: &str, thesaurus: &Thesaurus) -> QueryPlan {
    analyze_with(raw, &[], thesaurus)
}

/// Analyses a raw query with the caller's `required_terms` (1–2 terms,
/// already validated): each is a required concept, satisfied by any of its
/// okurigana variants, and is searched for even when the query omits it.
pub(crate) fn analyze_with(
    raw: &str,
    required_terms: &[String],
    thesaurus: &Thesaurus,
) -> QueryPlan {
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
        plan.required.push(vec![norm]);
    }
    let mut norm = text::normalize(&rest);
    for filler in FILLERS {
        norm = norm.replace(filler, " ");
    }
    add_text(&mut plan, &norm, None);
    mark_labels(&mut plan);
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
    for term in required_terms {
        add_required_term(&mut plan, term);
    }
    cap_terms(&mut plan, MAX_TERMS);
    plan
}

/// Keeps at most `max` terms, the most important roles first (a long
/// question loses stop words, backoff kanji and glue before content).
fn cap_terms(plan: &mut QueryPlan, max: usize) {
    if plan.terms.len() <= max {
        return;
    }
    let mut order: Vec<usize> = (0..plan.terms.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(rank(plan.terms[i].role)));
    let mut keep = vec![false; plan.terms.len()];
    for &i in order.iter().take(max) {
        keep[i] = true;
    }
    let mut i = 0;
    plan.terms.retain(|_| {
        i += 1;
        keep[i - 1]
    });
    for g in 0..plan.groups.len() {
        finish_group(plan, g);
    }
}

/// Adds one of the caller's required terms: its spellings become groups of
/// one required concept (the first spelling is the typed one).
fn add_required_term(plan: &mut QueryPlan, term: &str) {
    let spellings = required::variants(term);
    let Some(first) = spellings.first() else {
        return;
    };
    let concept = plan.groups.len();
    add_text(plan, first, None);
    for g in &mut plan.groups[concept..] {
        g.required = true;
        g.concept = concept;
        g.label = false;
    }
    for alt in &spellings[1..] {
        let from = plan.groups.len();
        add_text(plan, alt, Some(concept));
        for g in &mut plan.groups[from..] {
            g.required = true;
        }
    }
    plan.required.push(spellings);
    plan.required_terms += 1;
}

/// Label words standing as a concept of their own become intent: their
/// terms keep a tiny weight and the group leaves coverage — unless the
/// query has nothing else.
fn mark_labels(plan: &mut QueryPlan) {
    let is_label =
        |g: &QueryGroup| !g.required && !g.alternative && LABEL_WORDS.contains(&g.text.as_str());
    if plan.groups.iter().all(is_label) {
        return;
    }
    let labels: Vec<usize> = (0..plan.groups.len())
        .filter(|&g| is_label(&plan.groups[g]))
        .collect();
    for &g in &labels {
        plan.groups[g].label = true;
    }
    for term in &mut plan.terms {
        if !term.groups.is_empty() && term.groups.iter().all(|g| labels.contains(g)) {
            term.role = TermRole::Label;
        }
    }
}

impl QueryPlan {
    /// The concepts: for each, its groups and whether a user-typed group spells it.
    pub(crate) fn concepts(&self) -> Vec<(Vec<usize>, bool)> {
        let mut out: Vec<(usize, Vec<usize>, bool)> = Vec::new();
        for (g, group) in self.groups.iter().enumerate() {
            if group.label {
                continue;
            }
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
/// terms are added. Number expressions become concepts of their own and
/// their characters are not read again as words or kanji.
fn add_text(plan: &mut QueryPlan, norm: &str, alternative_of: Option<usize>) {
    let numbers = baton_text::numbers::find(norm);
    let mut rest = norm.to_string();
    for expr in numbers.iter().rev() {
        rest.replace_range(expr.start..expr.end, " ");
    }
    for expr in &numbers {
        let group = new_group(plan, norm[expr.start..expr.end].to_string(), alternative_of);
        add_term(
            plan,
            expr.specific().to_string(),
            TermRole::Content,
            Some(group),
        );
        for token in &expr.tokens[..expr.tokens.len().saturating_sub(1)] {
            add_term(plan, token.clone(), TermRole::Glue, None);
        }
        finish_group(plan, group);
    }
    let chars: Vec<char> = rest.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let cls = chars::class(chars[i]);
        let mut j = i + 1;
        match cls {
            CharClass::Kanji | CharClass::Hiragana | CharClass::Katakana => {
                while j < chars.len() && is_cjk(chars[j]) {
                    j += 1;
                }
                add_cjk_run(plan, &chars[i..j], alternative_of);
            }
            CharClass::Word => {
                while j < chars.len() && chars::class(chars[j]) == CharClass::Word {
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
        chars::class(c),
        CharClass::Kanji | CharClass::Hiragana | CharClass::Katakana
    )
}

fn add_cjk_run(plan: &mut QueryPlan, run: &[char], alternative_of: Option<usize>) {
    let hira: Vec<bool> = run
        .iter()
        .map(|c| chars::class(*c) == CharClass::Hiragana)
        .collect();
    let units = japanese::units(run);
    let any_chunk = hira.iter().any(|h| !h);
    for unit in &units {
        let chars = &run[unit.start..unit.end];
        if unit.kind == UnitKind::WeakStem {
            // A lone kanji followed by okurigana (見つかる, 込む) is a verb
            // or adjective stem: a weak term that forms no concept.
            if alternative_of.is_none() {
                add_term(plan, chars[0].to_string(), TermRole::Glue, None);
                continue;
            }
        }
        let group = new_group(plan, chars.iter().collect(), alternative_of);
        if chars.len() == 1 {
            if chars::class(chars[0]) == CharClass::Kanji {
                add_term(plan, chars[0].to_string(), TermRole::Content, Some(group));
            }
        } else {
            for pair in chars.windows(2) {
                add_term(plan, pair.iter().collect(), TermRole::Content, Some(group));
            }
        }
        finish_group(plan, group);
        // Backoff: each kanji of a multi-character concept also matches on
        // its own, with a low weight and no share in the concept's coverage
        // (character-unigram backoff of bigram indexing). Backoff terms only
        // rescore sections found by other terms; they add no candidates.
        if chars.len() > 1 {
            for &c in chars {
                if chars::class(c) == CharClass::Kanji {
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
        label: false,
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
        TermRole::Content => 5,
        TermRole::Glue => 4,
        TermRole::Backoff => 3,
        TermRole::Kana => 2,
        TermRole::Label => 1,
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
            if chars::class(c) == CharClass::Kanji {
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
        assert_eq!(plan.required, [["rotate keys"]]);
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
    fn label_words_become_intent_and_numbers_become_concepts() {
        let plan = analyze("定義 がん保険 第2章-1", &Thesaurus::builtin());
        assert_eq!(group_texts(&plan), ["第2章-1", "定義", "がん保険"]);
        let label = plan.groups.iter().find(|g| g.text == "定義").expect("定義");
        assert!(label.label);
        let role = |t: &str| plan.terms.iter().find(|x| x.text == t).map(|x| x.role);
        assert_eq!(role("定義"), Some(TermRole::Label));
        assert_eq!(role("2章-1"), Some(TermRole::Content));
        assert_eq!(role("2章"), Some(TermRole::Glue));
        assert_eq!(role("ん保"), Some(TermRole::Content));
        // Label groups take no part in coverage.
        assert!(
            plan.concepts()
                .iter()
                .all(|(g, _)| !g.iter().any(|i| plan.groups[*i].label))
        );
        // Alone, a label word is what the query is about.
        let plan = analyze("定義", &Thesaurus::builtin());
        assert!(!plan.groups[0].label);
    }

    #[test]
    fn required_terms_join_the_plan_with_their_variants() {
        let plan = analyze_with(
            "手続の書類",
            &["申し込み".to_string()],
            &Thesaurus::builtin(),
        );
        assert_eq!(plan.required, [["申し込み", "申込み", "申し込", "申込"]]);
        assert_eq!(plan.required_terms, 1);
        assert!(plan.terms.iter().any(|t| t.text == "申込"));
        assert!(plan.groups.iter().filter(|g| g.required).count() >= 2);
    }

    #[test]
    fn long_questions_keep_their_content_terms_first() {
        let q = "保険の契約について、入院したときの給付金と手術をしたときの給付金と通院したときの給付金と先進医療を受けたときの一時金とがんと診断されたときの給付金の違いと、それぞれの請求に必要な書類と請求先と期限を教えてください";
        let plan = analyze(q, &Thesaurus::builtin());
        assert!(plan.terms.len() <= MAX_TERMS);
        for g in plan.groups.iter().filter(|g| !g.alternative && !g.label) {
            assert!(g.term_count > 0, "{} lost all its terms", g.text);
        }
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
