//! Splitting a run of Japanese characters into concepts.
//!
//! A run (kanji, katakana and hiragana without separators) is first cut
//! into *chunks* (maximal kanji/katakana stretches) and the hiragana
//! between them. Each hiragana stretch is then read:
//!
//! * a particle next to a chunk separates (`病気で入院` → 病気 | 入院;
//!   `保険のがん特約` → 保険 | がん特約);
//! * stretches holding grammar (した, とき, ます …) or longer than three
//!   characters separate;
//! * what remains is part of a name: between two chunks it joins both
//!   (`抗がん剤`; a single hiragana between chunks is a particle or
//!   okurigana, 申し込む), and at the start of a run, or after a particle, it leads the
//!   chunk after it when it has two or three characters (`がん保険`,
//!   `保険のがん特約`); hiragana words on their own stay weak terms
//!   (`がんと診断` → 診断, with がん weighted by its rarity);
//! * hiragana after the last chunk is inflection (支払われる) and never joins.
//!
//! Mixed-script names are therefore one concept: in `がん保険` the concept
//! is がん保険, not the generic 保険 every file of an insurance manual shares.

use super::lists::{FUNCTION_BIGRAMS, NON_COMPOUND_KANA, PARTICLES, SEPARATING_PARTICLES};
use baton_text::chars::{self, CharClass};

/// What a stretch of a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UnitKind {
    /// A concept: a chunk, a mixed-script compound, or a hiragana word.
    Concept,
    /// A lone kanji followed by okurigana (見つかる): a weak term, no concept.
    WeakStem,
}

/// A stretch `[start, end)` of a run (character indices).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unit {
    /// First character.
    pub start: usize,
    /// One past the last character.
    pub end: usize,
    /// What it is.
    pub kind: UnitKind,
}

fn is_hiragana(c: char) -> bool {
    chars::class(c) == CharClass::Hiragana
}

/// Dictionary-form and adjective endings: hiragana ending with one of these
/// before a noun is a verb or adjective modifying it (使う場所, 大きい番号),
/// not part of a name.
const MODIFIER_ENDINGS: &[char] = &[
    'う', 'く', 'す', 'つ', 'ぬ', 'ふ', 'む', 'ゆ', 'る', 'い', 'た', 'だ', 'て', 'で',
];

/// Whether a hiragana core can be part of a name.
fn joinable(core: &[char]) -> bool {
    if core.is_empty() || core.len() > 3 {
        return false;
    }
    if core.last().is_some_and(|c| MODIFIER_ENDINGS.contains(c)) {
        return false;
    }
    let text: String = core.iter().collect();
    if NON_COMPOUND_KANA.contains(&text.as_str()) {
        return false;
    }
    !core.windows(2).any(|w| {
        let pair: String = w.iter().collect();
        FUNCTION_BIGRAMS.contains(&pair.as_str())
    })
}

/// How the hiragana of a run attach to its chunks.
#[derive(Debug, Default)]
struct Attachments {
    /// `join_right[k]`: chunk `k` and chunk `k + 1` form one name together
    /// with the hiragana between them.
    join_right: Vec<bool>,
    /// `(k, start)`: the hiragana from `start` up to chunk `k` lead its name.
    leads: Vec<(usize, usize)>,
}

/// Splits a CJK run into concept units (see the module docs).
pub(crate) fn units(run: &[char]) -> Vec<Unit> {
    // Chunks: maximal non-hiragana stretches.
    let mut chunks: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < run.len() {
        if is_hiragana(run[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < run.len() && !is_hiragana(run[i]) {
            i += 1;
        }
        chunks.push((start, i));
    }
    if chunks.is_empty() {
        return Vec::new();
    }
    let mut at = Attachments {
        join_right: vec![false; chunks.len()],
        ..Attachments::default()
    };
    // Hiragana before the first chunk: a leading name part (がん保険).
    if chunks[0].0 > 0 {
        let (start, end) = peel(run, 0, chunks[0].0, false, true);
        let core = &run[start..end];
        if joinable(core) && core.len() >= 2 && end == chunks[0].0 {
            at.leads.push((0, start));
        }
    }
    for k in 0..chunks.len() {
        let (from, to) = (
            chunks[k].1,
            chunks.get(k + 1).map(|c| c.0).unwrap_or(run.len()),
        );
        if from == to {
            continue;
        }
        if k + 1 == chunks.len() {
            // Trailing hiragana: inflection or particles, never a name part.
            continue;
        }
        if to - from == 1 {
            // One hiragana between chunks is a particle (病気で入院) or
            // okurigana of a verb (申し込む); neither makes a name.
            continue;
        }
        let (start, end) = peel(run, from, to, true, true);
        let (left_sep, right_sep) = (start > from, end < to);
        let core = &run[start..end];
        if !joinable(core) {
            continue;
        }
        match (left_sep, right_sep) {
            (false, false) => at.join_right[k] = true,
            // 保険のがん特約: がん leads the next chunk's name.
            (true, false) if core.len() >= 2 => at.leads.push((k + 1, start)),
            _ => {}
        }
    }
    assemble(run, &chunks, &at)
}

/// Peels a separating particle off the left (`left`) and/or the right
/// (`right`) end of a hiragana stretch; returns the core's range.
fn peel(run: &[char], start: usize, end: usize, left: bool, right: bool) -> (usize, usize) {
    let (mut s, mut e) = (start, end);
    if left && e - s >= 2 && SEPARATING_PARTICLES.contains(&run[s]) {
        s += 1;
    }
    if right && e - s >= 2 && SEPARATING_PARTICLES.contains(&run[e - 1]) {
        e -= 1;
    }
    (s, e)
}

fn assemble(run: &[char], chunks: &[(usize, usize)], at: &Attachments) -> Vec<Unit> {
    let mut units = Vec::new();
    let mut k = 0;
    while k < chunks.len() {
        let start = at
            .leads
            .iter()
            .find(|(c, _)| *c == k)
            .map(|(_, s)| *s)
            .unwrap_or(chunks[k].0);
        let mut end = chunks[k].1;
        while k + 1 < chunks.len() && at.join_right[k] {
            k += 1;
            end = chunks[k].1;
        }
        let single_kanji = end - start == 1 && chars::class(run[start]) == CharClass::Kanji;
        let okurigana = run
            .get(end)
            .is_some_and(|c| is_hiragana(*c) && !PARTICLES.contains(c));
        let kind = if single_kanji && okurigana && start > 0 {
            UnitKind::WeakStem
        } else {
            UnitKind::Concept
        };
        units.push(Unit { start, end, kind });
        k += 1;
    }
    units
}

#[cfg(test)]
mod tests {
    use super::*;

    fn concepts(text: &str) -> Vec<String> {
        let run: Vec<char> = text.chars().collect();
        units(&run)
            .into_iter()
            .filter(|u| u.kind == UnitKind::Concept)
            .map(|u| run[u.start..u.end].iter().collect())
            .collect()
    }

    #[test]
    fn mixed_script_names_are_one_concept() {
        assert_eq!(concepts("がん保険"), ["がん保険"]);
        assert_eq!(concepts("がん特約"), ["がん特約"]);
        assert_eq!(concepts("抗がん剤"), ["抗がん剤"]);
        assert_eq!(concepts("抗がん剤治療特約"), ["抗がん剤治療特約"]);
        assert_eq!(concepts("申し込み"), ["申"]);
        assert_eq!(concepts("混ぜて入れる"), ["混"]);
    }

    #[test]
    fn particles_and_grammar_separate() {
        assert_eq!(concepts("病気で入院"), ["病気", "入院"]);
        assert_eq!(concepts("保険のがん特約"), ["保険", "がん特約"]);
        assert_eq!(concepts("がんと診断"), ["診断"]);
        assert_eq!(concepts("入院中にがん"), ["入院中"]);
        assert_eq!(concepts("同じ名前"), ["同", "名前"]);
        assert_eq!(concepts("入院したとき給付金"), ["入院", "給付金"]);
        assert_eq!(concepts("この保険"), ["保険"]);
        assert_eq!(concepts("大きい番号"), ["大", "番号"]);
        assert_eq!(concepts("使う場所"), ["使", "場所"]);
    }

    #[test]
    fn inflection_never_joins_and_lone_stems_stay_weak() {
        assert_eq!(concepts("支払われる"), ["支払"]);
        assert_eq!(concepts("お金"), ["金"]);
        let run: Vec<char> = "すぐ見つかる".chars().collect();
        let u = units(&run);
        assert_eq!(u.len(), 1);
        assert_eq!(u[0].kind, UnitKind::WeakStem);
    }
}
