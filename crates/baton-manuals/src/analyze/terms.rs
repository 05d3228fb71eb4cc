//! Turning one manual file into indexable documents (one per section).

use std::collections::HashMap;

use crate::analyze::sections::{self, SectionInfo};
use crate::wire::ids::FileType;
use baton_text::normalize as text;
use baton_text::tokenize::{self, TokenKind};

/// Distinct terms indexed per section (a book chapter has a few thousand).
pub(crate) const MAX_TERMS_PER_DOC: usize = 20_000;

/// Term frequencies of one term in one document, per field.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct FieldFreq {
    /// Occurrences in the section body.
    pub body: u16,
    /// Occurrences in the section's own heading.
    pub title: u8,
    /// Occurrences in the context (ancestor headings).
    pub ctx: u8,
    /// Occurrences in the file's path (folders and file name).
    pub name: u8,
}

/// One indexable section.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DocData {
    /// Index of the section in [`FileRecord::sections`].
    pub section: u32,
    /// Body length in tokens (BM25 length normalisation).
    pub body_len: u32,
    /// Byte range of the body in the file's LF-normalised text (the whole
    /// text for JSON), from which the matched text is read back on demand.
    pub body: (u32, u32),
    /// Distinct terms with their field frequencies, sorted by term.
    pub terms: Vec<(String, FieldFreq)>,
    /// Whether the section states exclusions (see `search::has_exceptions`).
    pub exceptions: bool,
    /// Whether the section is part of a change log or release notes
    /// ([`is_changelog`]): long lists of every feature's name, which match
    /// everyday words without answering them.
    pub changelog: bool,
}

/// Identity of a file's content on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    /// Size in bytes.
    pub size: u64,
    /// Modification time in nanoseconds since the Unix epoch (0 if unknown).
    pub mtime_ns: i64,
    /// FNV-1a 64 hash of the bytes.
    pub hash: u64,
}

/// Everything the index keeps about one file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FileRecord {
    /// Path relative to the manual directory, `/`-separated, as on disk.
    pub path: String,
    /// Markdown or JSON.
    pub file_type: FileType,
    /// Content identity.
    pub fingerprint: Fingerprint,
    /// Number of lines.
    pub line_count: u32,
    /// All sections (including heading-only ones), in document order.
    pub sections: Vec<SectionInfo>,
    /// The indexable sections.
    pub docs: Vec<DocData>,
    /// Whether offsets in the LF-normalised text equal offsets in the file
    /// (the bytes were valid UTF-8 without BOM or CR).
    pub raw_offsets: bool,
}

/// FNV-1a 64-bit hash.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// Analyses a file's bytes (decoded as UTF-8, invalid bytes replaced, BOM
/// dropped) into a record.
pub(crate) fn analyze_bytes(
    path: &str,
    file_type: FileType,
    bytes: &[u8],
    fingerprint: Fingerprint,
) -> FileRecord {
    let lossless = std::str::from_utf8(bytes).is_ok() && !bytes.starts_with(b"\xef\xbb\xbf");
    let text = crate::analyze::decode::decode_text(bytes);
    let mut record = analyze_file(path, file_type, &text, fingerprint);
    record.raw_offsets &= lossless;
    record
}

/// Analyses a file's text (any line endings) into a record.
pub(crate) fn analyze_file(
    path: &str,
    file_type: FileType,
    raw: &str,
    fingerprint: Fingerprint,
) -> FileRecord {
    let text = text::to_lf(raw);
    let file_name = path.rsplit('/').next().unwrap_or(path);
    let stem = file_stem(path);
    let lines: Vec<&str> = text.split('\n').collect();
    let mut line_starts = Vec::with_capacity(lines.len() + 1);
    let mut at = 0usize;
    for line in &lines {
        line_starts.push(at);
        at += line.len() + 1;
    }
    let line_count = sections::line_count(&text);
    let mut path_context = path_words(path);
    let (section_list, docs) = match file_type {
        FileType::Md => {
            let sections = sections::parse_markdown(&text, stem);
            // What the file says it is: its front matter's title and the
            // title of its only top heading, as file-level words.
            let front = front_matter(&text);
            if let Some(title) = &front.title {
                path_context.push('\n');
                path_context.push_str(title);
            }
            /*H1*/
            let file_changelog = is_changelog(path);
            let docs = sections
                .iter()
                .enumerate()
                .filter_map(|(i, s)| {
                    let body_from = if s.level == 0 {
                        s.start_line
                    } else {
                        s.heading_end_line + 1
                    };
                    let range = line_range(&lines, &line_starts, body_from, s.body_end_line);
                    let body = &text[range.0..range.1];
                    if body.trim().is_empty() {
                        return None;
                    }
                    let title = if s.level == 0 { "" } else { s.title.as_str() };
                    let ctx = ancestors(&sections, s);
                    let mut doc = build_doc(i as u32, title, &ctx, &path_context, body, range);
                    // A page's first sentence says what the page is about (a
                    // definition, a command's purpose) — often in the words a
                    // person asks with, under a heading that is only a name:
                    // its words count once more, without lengthening it.
                    if s.level <= 1 {
                        add_lead(&mut doc, lead_sentence(&text::normalize(body)));
                    }
                    // The front matter's description leads the file's first
                    // section (the page's own summary of itself).
                    if let Some(description) = front.description.as_deref()
                        && doc_is_first(&sections, i)
                    {
                        add_lead(&mut doc, description);
                    }
                    doc.changelog = file_changelog || is_changelog(title) || is_changelog(&ctx);
                    Some(doc)
                })
                .collect();
            (sections, docs)
        }
        FileType::Json => {
            let section = sections::json_section(&text, file_name);
            let body = sections::flatten_json(&text);
            let docs = if body.trim().is_empty() {
                Vec::new()
            } else {
                vec![build_doc(0, "", "", &path_context, &body, (0, text.len()))]
            };
            (vec![section], docs)
        }
    };
    FileRecord {
        path: path.to_string(),
        file_type,
        fingerprint,
        line_count,
        sections: section_list,
        docs,
        raw_offsets: !raw.contains('\r'),
    }
}

/// A file's name without its extension (`a/03_免責事由.md` → `03_免責事由`).
pub(crate) fn file_stem(path: &str) -> &str {
    let file_name = path.rsplit('/').next().unwrap_or(path);
    file_name
        .rsplit_once('.')
        .map(|(s, _)| s)
        .unwrap_or(file_name)
}

/// Byte range of lines `from..=to` (1-based) without the final newline.
fn line_range(lines: &[&str], starts: &[usize], from: u32, to: u32) -> (usize, usize) {
    if from == 0 || from > to {
        return (0, 0);
    }
    let first = (from - 1) as usize;
    let last = (to as usize).min(lines.len());
    if first >= last {
        return (0, 0);
    }
    (starts[first], starts[last - 1] + lines[last - 1].len())
}

/// The file path as words (`03_免責事由.md` → `03 免責事由`).
fn path_words(path: &str) -> String {
    let without_ext = path.rsplit_once('.').map(|(s, _)| s).unwrap_or(path);
    without_ext
        .chars()
        .map(|c| {
            if matches!(c, '/' | '_' | '-' | '.') {
                ' '
            } else {
                c
            }
        })
        .collect()
}

fn ancestors(sections: &[SectionInfo], section: &SectionInfo) -> String {
    let mut out = String::new();
    let mut parent = section.parent;
    let mut guard = 0;
    while let Some(p) = parent {
        let Some(s) = sections.get(p as usize) else {
            break;
        };
        out.push_str(&s.title);
        out.push('\n');
        parent = s.parent;
        guard += 1;
        if guard > 16 {
            break;
        }
    }
    out
}

/// Separates the file name from the section in a document's matched text
/// (a sentence boundary for the late rerank).
pub(crate) const NAME_SEPARATOR: &str = " | ";

/// The text a document is matched against: the file name, then the
/// section's heading and body (all normalised). Phrase bonuses, required
/// phrases and terms, and the late rerank all read this text.
pub(crate) fn matched_text(stem_norm: &str, title_norm: &str, body_norm: &str) -> String {
    let mut out = String::with_capacity(stem_norm.len() + title_norm.len() + body_norm.len() + 4);
    out.push_str(stem_norm);
    out.push_str(NAME_SEPARATOR);
    out.push_str(title_norm);
    if !title_norm.is_empty() {
        out.push(' ');
    }
    out.push_str(body_norm);
    out
}

fn build_doc(
    section: u32,
    title: &str,
    ctx: &str,
    path_words: &str,
    body: &str,
    range: (usize, usize),
) -> DocData {
    let mut counts: HashMap<String, FieldFreq> = HashMap::new();
    let title_norm = text::normalize(title);
    let ctx_norm = text::normalize(ctx);
    let path_norm = text::normalize(path_words);
    let body_norm = text::normalize(body);
    // Headings and the path first: when a hostile section reaches the
    // distinct-term cap, its body is what loses terms.
    let mut ignored = 0u32;
    count_field(
        &title_norm,
        &mut counts,
        |f| f.title = f.title.saturating_add(1),
        &mut ignored,
    );
    count_field(
        &ctx_norm,
        &mut counts,
        |f| f.ctx = f.ctx.saturating_add(1),
        &mut ignored,
    );
    count_field(
        &path_norm,
        &mut counts,
        |f| f.name = f.name.saturating_add(1),
        &mut ignored,
    );
    let mut body_len = 0u32;
    count_field(
        &body_norm,
        &mut counts,
        |f| f.body = f.body.saturating_add(1),
        &mut body_len,
    );

    let mut terms: Vec<(String, FieldFreq)> = counts.into_iter().collect();
    terms.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut section_text = title_norm;
    if !section_text.is_empty() {
        section_text.push(' ');
    }
    section_text.push_str(&body_norm);
    DocData {
        section,
        body_len,
        body: (
            u32::try_from(range.0).unwrap_or(u32::MAX),
            u32::try_from(range.1).unwrap_or(u32::MAX),
        ),
        terms,
        exceptions: crate::analyze::exceptions::has_exceptions(&section_text),
        changelog: false,
    }
}

/// Extra body occurrences a word of a section's lead sentence counts for.
const LEAD_EXTRA: u16 = 1;
/// A lead sentence is cut here (characters).
const LEAD_MAX_CHARS: usize = 200;

/// The first sentence of a normalised section body: the first line with
/// words that is not markup (code fences, tables, block markers, images,
/// notes), up to its first sentence end.
fn lead_sentence(body: &str) -> &str {
    let mut in_fence = false;
    let mut front: Option<&str> = None;
    for (n, line) in body.lines().enumerate() {
        let t = line.trim();
        if n == 0 && (t == "---" || t == "+++") {
            front = Some(t);
            continue;
        }
        if let Some(fence) = front {
            if t == fence {
                front = None;
            }
            continue;
        }
        if t.starts_with("```") || t.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence
            || t.is_empty()
            || t.starts_with(['|', '<', ':', '!', '{', '-', '>', '#', '*', '+'])
            || t.starts_with("note:")
            || t.starts_with("tip:")
            || t.starts_with("important:")
            || t.chars().filter(|c| c.is_alphanumeric()).count() < 8
        {
            continue;
        }
        let mut end = t.len();
        for (i, c) in t.char_indices() {
            if i >= 20 && matches!(c, '。' | '!' | '?' | '．') {
                end = i + c.len_utf8();
                break;
            }
            if i >= 20 && c == '.' && t[i + 1..].starts_with(' ') {
                end = i + 1;
                break;
            }
        }
        let mut cut = end.min(LEAD_MAX_CHARS * 4);
        if let Some((i, _)) = t.char_indices().nth(LEAD_MAX_CHARS) {
            cut = cut.min(i);
        }
        while !t.is_char_boundary(cut) {
            cut -= 1;
        }
        return &t[..cut];
    }
    ""
}

/// Adds a text's words to a document as lead words (not lengthening it).
fn add_lead(doc: &mut DocData, text: &str) {
    let norm = text::normalize(text);
    let mut counts: HashMap<String, FieldFreq> = HashMap::new();
    let mut len = 0u32;
    count_field(
        &norm,
        &mut counts,
        |f| f.body = f.body.saturating_add(LEAD_EXTRA),
        &mut len,
    );
    for (term, f) in counts {
        match doc.terms.binary_search_by(|(t, _)| t.as_str().cmp(&term)) {
            Ok(i) => doc.terms[i].1.body = doc.terms[i].1.body.saturating_add(f.body),
            Err(i) if doc.terms.len() < MAX_TERMS_PER_DOC => doc.terms.insert(i, (term, f)),
            Err(_) => {}
        }
    }
}

/// Whether section `i` is the file's first search unit.
fn doc_is_first(sections: &[SectionInfo], i: usize) -> bool {
    i == 0 || sections.iter().take(i).all(|s| s.level == 0)
}

/// Words that name a change log or release notes (in a path or heading).
const CHANGELOG_WORDS: &[&str] = &[
    "changelog",
    "change log",
    "change-log",
    "release notes",
    "release-notes",
    "release_notes",
    "releasenotes",
    "releases",
    "what's new",
    "whats-new",
    "リリースノート",
    "更新履歴",
    "変更履歴",
    "変更点",
];

/// Whether a path or heading names a change log or release notes.
pub(crate) fn is_changelog(text: &str) -> bool {
    let lower = text.to_lowercase();
    CHANGELOG_WORDS.iter().any(|w| lower.contains(w))
}

/// The title and description of a Markdown file's front matter (YAML
/// between `---` lines, or TOML between `+++` lines, at the very top).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct FrontMatter {
    pub title: Option<String>,
    pub description: Option<String>,
}

pub(crate) fn front_matter(text: &str) -> FrontMatter {
    let mut out = FrontMatter::default();
    let text = text.trim_start_matches('\u{feff}');
    let fence = if text.starts_with("---\n") {
        "---"
    } else if text.starts_with("+++\n") {
        "+++"
    } else {
        return out;
    };
    for line in text.lines().skip(1).take(200) {
        if line.trim_end() == fence {
            return out;
        }
        let Some((key, value)) = line.split_once([':', '=']) else {
            continue;
        };
        let value = value.trim().trim_matches(['"', '\'']).trim();
        if value.is_empty() || value.len() > 1000 {
            continue;
        }
        match key.trim().to_ascii_lowercase().as_str() {
            "title" => out.title = Some(value.to_string()),
            "description" => out.description = Some(value.to_string()),
            _ => {}
        }
    }
    FrontMatter::default()
}

fn count_field(
    text: &str,
    counts: &mut HashMap<String, FieldFreq>,
    bump: impl Fn(&mut FieldFreq),
    len: &mut u32,
) {
    tokenize::for_each_token(text, |term, kind| {
        if !matches!(kind, TokenKind::Unigram | TokenKind::Number) {
            *len += 1;
        }
        let full = counts.len() >= MAX_TERMS_PER_DOC;
        match counts.get_mut(term) {
            Some(f) => bump(f),
            // A section with more distinct terms is hostile or garbage:
            // further new terms are not indexed, which bounds memory.
            None if full => {}
            None => {
                let mut f = FieldFreq::default();
                bump(&mut f);
                counts.insert(term.to_string(), f);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp() -> Fingerprint {
        Fingerprint {
            size: 0,
            mtime_ns: 0,
            hash: 0,
        }
    }

    #[test]
    fn lead_sentences_front_matter_and_change_logs() {
        assert_eq!(
            lead_sentence(
                "```\ncode here and more\n```\n| a | b |\nThe retention window lasts ninety days. Other text.\n"
            ),
            "The retention window lasts ninety days."
        );
        assert_eq!(
            lead_sentence(
                "---\ntitle: x long enough title\n---\nウィジェットは、UI上に設置できる小型のパーツです。続き。"
            ),
            "ウィジェットは、UI上に設置できる小型のパーツです。"
        );
        assert_eq!(lead_sentence("- item one two three\n"), "");
        let fm =
            front_matter("---\ntitle: \"Widgets\"\ndescription: Small parts on the UI\n---\n# W\n");
        assert_eq!(fm.title.as_deref(), Some("Widgets"));
        assert_eq!(fm.description.as_deref(), Some("Small parts on the UI"));
        assert_eq!(front_matter("# no front matter\n"), FrontMatter::default());
        assert_eq!(
            front_matter("---\ntitle: never closed\n"),
            FrontMatter::default()
        );
        let rec = analyze_file(
            "docs/releases.md",
            FileType::Md,
            "---\ntitle: Zanzibar\ndescription: every change\n---\n# 2.0\nWidgets were added to the dashboard.\n",
            fp(),
        );
        assert!(rec.docs.iter().all(|d| d.changelog));
        let first = &rec.docs[0];
        // The front matter's description leads the first section; its
        // title is a file-level word of every section.
        let freq = |t: &str| first.terms.iter().find(|(s, _)| s == t).map(|(_, f)| *f);
        assert!(freq("every").is_some_and(|f| f.body >= 1));
        assert!(
            rec.docs
                .iter()
                .all(|d| d.terms.iter().any(|(t, f)| t == "zanzibar" && f.name >= 1))
        );
        let rec = analyze_file(
            "guide/widgets.md",
            FileType::Md,
            "# Widgets\nSmall parts.\n## Change log of the widget API\nv2 renamed them.\n## Adding one\nPress add.\n",
            fp(),
        );
        let flags: Vec<bool> = rec.docs.iter().map(|d| d.changelog).collect();
        assert_eq!(flags, vec![false, true, false]);
        // The page's lead sentence counts again; a sub-section's does not.
        let body = |d: &DocData, t: &str| d.terms.iter().find(|(s, _)| s == t).map(|(_, f)| f.body);
        assert_eq!(body(&rec.docs[0], "small"), Some(2));
        assert_eq!(body(&rec.docs[2], "press"), Some(1));
    }

    #[test]
    fn markdown_sections_become_docs_with_fields() {
        let rec = analyze_file(
            "03_免責事由.md",
            FileType::Md,
            "# 免責事由\n## 故意\n故意による事故は支払いません。\n",
            fp(),
        );
        assert_eq!(rec.sections.len(), 2);
        // The heading-only `# 免責事由` is not a doc; `## 故意` is.
        assert_eq!(rec.docs.len(), 1);
        let doc = &rec.docs[0];
        let freq = |t: &str| doc.terms.iter().find(|(s, _)| s == t).map(|(_, f)| *f);
        // A sub-section's lead is not counted again (only a page's is).
        assert_eq!(freq("故意").map(|f| (f.body, f.title)), Some((1, 1)));
        assert_eq!(doc.body_len, 13);
        // The parent heading and the file name are context.
        assert!(freq("免責").is_some_and(|f| f.ctx >= 1 && f.name >= 1));
        // The body range covers the section's own text.
        let text = "# 免責事由\n## 故意\n故意による事故は支払いません。\n";
        assert_eq!(
            &text[doc.body.0 as usize..doc.body.1 as usize],
            "故意による事故は支払いません。"
        );
    }

    #[test]
    fn json_is_one_doc() {
        let rec = analyze_file("p.json", FileType::Json, r#"{"title":"支払い"}"#, fp());
        assert_eq!(rec.docs.len(), 1);
        assert_eq!(rec.sections[0].title, "p.json");
    }
}
