//! # baton-text
//!
//! Text as baton's searches see it, with no knowledge of manuals, runs or
//! files beyond a thesaurus file: the normal form ([`normalize`]),
//! character classes ([`chars`]), number expressions ([`numbers`]),
//! dictionary-free tokens ([`tokenize`]: CJK bigrams, a unigram per kanji,
//! lightly stemmed words) and the thesaurus of everyday → formal words
//! ([`thesaurus`]). Manual search (`baton-manuals`) and the run history's
//! similar-run search (`baton-history`) both rank text with it.
//!
//! A leaf crate: it knows no other baton crate. Modules import downwards
//! only: `chars` ← `numbers` ← `tokenize`; `normalize` ← `thesaurus`.

#![warn(missing_docs)]

pub mod chars;
pub mod normalize;
pub mod numbers;
pub mod thesaurus;
pub mod tokenize;

/// The index terms of `text` exactly as manual search derives them: the text
/// in normal form (NFKC, lower case), then CJK character bigrams (plus a
/// unigram per kanji) and lightly stemmed words, in text order, repeats
/// kept. For other crates that rank text the way manual search does (the run
/// history's similar-run search).
pub fn index_terms(text: &str) -> Vec<String> {
    let normal = normalize::normalize(text);
    let mut terms = Vec::new();
    tokenize::for_each_token(&normal, |term, _| terms.push(term.to_string()));
    terms
}
