//! Sections that state exclusions or exceptions (免責, 対象外, not covered …).

/// Words that mark a section as stating exclusions or exceptions.
pub(crate) const EXCEPTION_MARKERS: &[&str] = &[
    "免責",
    "対象外",
    "除外",
    "不担保",
    "支払いません",
    "支払われません",
    "お支払いしません",
    "支払わない",
    "支払われない",
    "適用しません",
    "適用されません",
    "not covered",
    "exclusion",
    "excluded",
    "does not apply",
    "not supported",
    "exception",
];

/// Whether a normalised text states exclusions: a marker in the first 80
/// characters (the heading) or at least two markers in the text.
pub(crate) fn has_exceptions(text: &str) -> bool {
    let head_end = text
        .char_indices()
        .nth(80)
        .map(|(i, _)| i)
        .unwrap_or(text.len());
    let head = &text[..head_end];
    if EXCEPTION_MARKERS.iter().any(|m| head.contains(m)) {
        return true;
    }
    EXCEPTION_MARKERS
        .iter()
        .map(|m| text.matches(m).count())
        .sum::<usize>()
        >= 2
}
