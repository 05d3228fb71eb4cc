//! What the index keeps in memory per record: the few fields searches and
//! estimates need, and where the full record lives in the file. A record's
//! phases, findings and friction are read from the file when a query needs
//! them (patterns read the newest few hundred, a summary one), so loading
//! 10,000 runs reads little more than their search terms.

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
    /// The request in one line.
    pub request: String,
    /// Search terms in the file's form (`term:count term:count …`, sorted by term).
    pub terms: String,
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
    request: Cow<'a, str>,
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
    #[allow(dead_code)]
    workflow: serde::de::IgnoredAny,
    #[allow(dead_code)]
    created: serde::de::IgnoredAny,
}

/// Reads the in-memory part of one line (`None`: not a record).
pub fn parse_line(line: &[u8], offset: u64) -> Option<Entry> {
    // Empty lists are never written, so presence means "has some".
    let slim: Slim<'_> = serde_json::from_slice(line).ok()?;
    // A line anyone could have written: a workspace that is no folder name
    // makes it no record; its request is cut and cleaned as baton writes it.
    if !crate::record::valid_workspace_name(&slim.workspace) {
        return None;
    }
    let request = if slim.request.chars().count() <= crate::collect::REQUEST_SUMMARY_CHARS
        && !slim.request.chars().any(char::is_control)
    {
        slim.request.into_owned()
    } else {
        crate::text::prompt_line(&slim.request, crate::collect::REQUEST_SUMMARY_CHARS)
    };
    Some(Entry {
        workspace: slim.workspace.into_owned(),
        outcome: slim.outcome,
        effort: slim.effort,
        ended: slim.ended,
        tokens: slim.tokens,
        work_ms: slim.work_ms,
        loops: slim.loops,
        request,
        terms: slim.terms.into_owned(),
        len: slim.len,
        reviewed: slim.findings.is_some() || slim.verdicts.is_some(),
        reported: slim.friction.is_some(),
        offset,
        line_len: u32::try_from(line.len()).unwrap_or(u32::MAX),
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
        let e = parse_line(ok, 7).unwrap();
        assert_eq!((e.offset, e.reviewed, e.reported), (7, true, false));
        assert_eq!(e.terms, "a:1");
        assert!(parse_line(br#"{"workspace":"w","outcome":"completed"}"#, 0).is_none());
        assert!(parse_line(b"not json", 0).is_none());
    }
}
