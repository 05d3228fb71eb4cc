//! What the index keeps in memory per record: the few fixed-size fields
//! searches and estimates need, and where the full record lives in the
//! file. Its search terms live only in the BM25 postings; its request, its
//! terms in the file's form, its phases, findings and friction are read
//! from the file when a query needs them (the few runs a search returns,
//! the newest few hundred for patterns), so memory grows by about a hundred
//! bytes per past run, and loading 10,000 runs reads the file line by line.

use std::borrow::Cow;

use baton_state::{Effort, Timestamp};
use serde::Deserialize;

use crate::record::Outcome;

/// The in-memory part of one record.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Workspace folder name.
    pub workspace: String,
    /// How the run ended.
    pub outcome: Outcome,
    /// Effort.
    pub effort: Option<Effort>,
    /// When it ended.
    pub ended: Timestamp,
    /// Tokens.
    pub tokens: u64,
    /// Work milliseconds.
    pub work_ms: u64,
    /// Loops.
    pub loops: u32,
    /// A hash of the search terms in the file's form: a newer record of the
    /// same workspace with the same terms changes nothing.
    pub terms_hash: u64,
    /// BM25 document length.
    pub len: u32,
    /// Whether the record has findings or verdicts (a reviewed run).
    pub reviewed: bool,
    /// Whether the record has friction items.
    pub reported: bool,
    /// Byte offset of the record's line in the file.
    pub offset: u64,
    /// Length of the line without its newline.
    pub line_len: u32,
}

/// The fields read at load; everything else in the line is skipped.
#[derive(Deserialize)]
struct Slim<'a> {
    #[serde(borrow)]
    workspace: Cow<'a, str>,
    outcome: Outcome,
    #[serde(default)]
    effort: Option<Effort>,
    ended: Timestamp,
    #[serde(default)]
    tokens: u64,
    #[serde(default)]
    work_ms: u64,
    #[serde(default)]
    loops: u32,
    #[serde(default, borrow)]
    terms: Cow<'a, str>,
    #[serde(default)]
    len: u32,
    #[serde(default)]
    findings: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    verdicts: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    friction: Option<serde::de::IgnoredAny>,
    // Required in a record: their absence makes the line unreadable.
    #[allow(dead_code, reason = "required to parse; never read")]
    workflow: serde::de::IgnoredAny,
    #[allow(dead_code, reason = "required to parse; never read")]
    created: serde::de::IgnoredAny,
}

/// Reads the in-memory part of one line and its search terms in the
/// file's form (`None`: not a record).
pub fn parse_line(line: &[u8], offset: u64) -> Option<(Entry, Cow<'_, str>)> {
    // Empty lists are never written, so presence means "has some".
    let slim: Slim<'_> = serde_json::from_slice(line).ok()?;
    // A line anyone could have written: a workspace that is no folder name
    // makes it no record.
    if !crate::record::valid_workspace_name(&slim.workspace) {
        return None;
    }
    let entry = Entry {
        workspace: slim.workspace.into_owned(),
        outcome: slim.outcome,
        effort: slim.effort,
        ended: slim.ended,
        tokens: slim.tokens,
        work_ms: slim.work_ms,
        loops: slim.loops,
        terms_hash: hash_terms(&slim.terms),
        len: slim.len,
        reviewed: slim.findings.is_some() || slim.verdicts.is_some(),
        reported: slim.friction.is_some(),
        offset,
        line_len: u32::try_from(line.len()).unwrap_or(u32::MAX),
    };
    Some((entry, slim.terms))
}

/// The fields of a line a search result shows: its terms (the file's form)
/// and its request.
#[derive(Deserialize)]
struct Shown<'a> {
    #[serde(default, borrow)]
    terms: Cow<'a, str>,
    #[serde(default, borrow)]
    request: Cow<'a, str>,
}

/// The terms (file's form) and the request of one record line, the request
/// cut and cleaned as baton writes it (a line anyone could have written).
pub fn terms_and_request(line: &[u8]) -> Option<(String, String)> {
    let shown: Shown<'_> = serde_json::from_slice(line).ok()?;
    let request = if shown.request.chars().count() <= crate::collect::REQUEST_SUMMARY_CHARS
        && !shown.request.chars().any(char::is_control)
    {
        shown.request.into_owned()
    } else {
        crate::text::prompt_line(&shown.request, crate::collect::REQUEST_SUMMARY_CHARS)
    };
    Some((shown.terms.into_owned(), request))
}

/// A stable hash of a terms string.
pub fn hash_terms(terms: &str) -> u64 {
    // FNV-1a: the same in every process and build.
    terms.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The `(term, count)` pairs of a terms string.
pub fn terms(text: &str) -> impl Iterator<Item = (&str, u32)> {
    text.split(' ').filter_map(|pair| {
        let (term, count) = pair.rsplit_once(':')?;
        Some((term, count.parse().ok()?))
    })
}

/// The count of `term` in a terms string (sorted by term).
pub fn count_of(text: &str, term: &str) -> u32 {
    terms(text).find(|(t, _)| *t == term).map_or(0, |(_, n)| n)
}

/// A terms list in the file's form.
pub fn format_terms(terms: &[(String, u32)]) -> String {
    let mut out = String::with_capacity(terms.len() * 10);
    for (t, n) in terms {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(t);
        out.push(':');
        out.push_str(&n.to_string());
    }
    out
}

/// Serde adapter: `Vec<(String, u32)>` as a `term:count …` string.
pub mod terms_field {
    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes the terms string.
    pub fn serialize<S: Serializer>(terms: &[(String, u32)], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format_terms(terms))
    }

    /// Reads the terms string.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, u32)>, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Ok(super::terms(&text)
            .map(|(t, n)| (t.to_string(), n))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_round_trip_through_the_string_form() {
        let t = vec![("login".to_string(), 4), ("ログ".to_string(), 1)];
        let s = format_terms(&t);
        assert_eq!(s, "login:4 ログ:1");
        assert_eq!(terms(&s).collect::<Vec<_>>(), [("login", 4), ("ログ", 1)]);
        assert_eq!(count_of(&s, "ログ"), 1);
        assert_eq!(count_of(&s, "x"), 0);
        assert_eq!(terms("").count(), 0);
    }

    #[test]
    fn lines_without_the_required_fields_are_not_records() {
        let ok = br#"{"workspace":"w","workflow":"forge","outcome":"completed","created":"2026-01-01T00:00:00Z","ended":"2026-01-01T00:00:00Z","findings":[{"x":1}],"terms":"a:1"}"#;
        let (e, terms) = parse_line(ok, 7).unwrap();
        assert_eq!((e.offset, e.reviewed, e.reported), (7, true, false));
        assert_eq!(terms, "a:1");
        assert_eq!(e.terms_hash, hash_terms("a:1"));
        assert_eq!(
            terms_and_request(ok).unwrap(),
            ("a:1".into(), String::new())
        );
        assert!(parse_line(br#"{"workspace":"w","outcome":"completed"}"#, 0).is_none());
        assert!(parse_line(b"not json", 0).is_none());
    }
}
