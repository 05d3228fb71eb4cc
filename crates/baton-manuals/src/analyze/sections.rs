//! Splitting manual files into sections ("nodes").
//!
//! Markdown: every ATX or setext heading (found by pulldown-cmark, so
//! headings inside code fences and YAML front matter are ignored) starts a
//! section that owns its lines up to the next heading of any level; its
//! subtree extends to the next heading of the same or a higher level. Text
//! before the first heading becomes a level-0 section titled with the file
//! stem. JSON: one level-0 section for the whole file.

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One section of a manual file. Line numbers are 1-based and inclusive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SectionInfo {
    /// Heading text (file stem for a preamble or a heading-less file, file name for JSON).
    pub title: String,
    /// Heading level 1–6; 0 for a preamble, a heading-less file or a JSON file.
    pub level: u8,
    /// The heading line (1 for level-0 sections).
    pub start_line: u32,
    /// Last line of the heading itself (setext headings take two lines).
    pub heading_end_line: u32,
    /// Last line owned by this section (before the next heading).
    pub body_end_line: u32,
    /// Last line of this section's subtree (before the next heading of the same or a higher level).
    pub end_line: u32,
    /// Index of the enclosing section in the file's section list.
    pub parent: Option<u32>,
}

/// Headings kept per file; later ones are read as text of the last section
/// (a file with more is hostile or generated, and each heading costs
/// memory in the index and output in `manual_toc`).
pub const MAX_HEADINGS_PER_FILE: usize = 10_000;
/// Characters kept of a heading's title (longer titles end with `…`).
pub const MAX_TITLE_CHARS: usize = 300;

/// Byte offsets of line starts, for mapping parser offsets to line numbers.
struct LineMap(Vec<usize>);

impl LineMap {
    fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(
            text.match_indices('\n')
                .map(|(i, _)| i + 1)
                .filter(|&i| i < text.len()),
        );
        LineMap(starts)
    }

    fn line_of(&self, byte: usize) -> u32 {
        let idx = match self.0.binary_search(&byte) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        };
        (idx + 1) as u32
    }

    fn count(&self, text: &str) -> u32 {
        if text.is_empty() {
            0
        } else {
            self.0.len() as u32
        }
    }
}

/// Number of lines in an LF-normalised text (a trailing newline adds none).
pub fn line_count(text: &str) -> u32 {
    LineMap::new(text).count(text)
}

/// Parses the sections of a Markdown text (LF-normalised).
pub fn parse_markdown(text: &str, file_stem: &str) -> Vec<SectionInfo> {
    let lines = LineMap::new(text);
    let total = lines.count(text).max(1);
    let mut headings: Vec<(u8, u32, u32, String)> = Vec::new();
    let mut current: Option<(u8, u32, u32, String)> = None;
    let options = Options::ENABLE_YAML_STYLE_METADATA_BLOCKS
        | Options::ENABLE_TABLES
        | Options::ENABLE_PLUSES_DELIMITED_METADATA_BLOCKS;
    for (event, range) in Parser::new_ext(text, options).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, .. }) if headings.len() < MAX_HEADINGS_PER_FILE => {
                let start = lines.line_of(range.start);
                let end = lines.line_of(range.end.saturating_sub(1).max(range.start));
                current = Some((heading_level(level), start, end, String::new()));
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, start, end, title)) = current.take() {
                    let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
                    headings.push((level, start, end, cap_title(title)));
                }
            }
            Event::Text(t) | Event::Code(t) | Event::InlineMath(t) | Event::DisplayMath(t) => {
                if let Some((_, _, _, title)) = current.as_mut()
                    && title.len() < MAX_TITLE_CHARS * 4
                {
                    title.push_str(&t);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some((_, _, _, title)) = current.as_mut() {
                    title.push(' ');
                }
            }
            _ => {}
        }
    }
    let mut sections = Vec::with_capacity(headings.len() + 1);
    let first_heading = headings.first().map(|h| h.1).unwrap_or(total + 1);
    let preamble_has_text = text
        .lines()
        .take(first_heading.saturating_sub(1) as usize)
        .any(|l| !l.trim().is_empty());
    if headings.is_empty() || preamble_has_text {
        let last = first_heading.saturating_sub(1).max(1);
        sections.push(SectionInfo {
            title: file_stem.to_string(),
            level: 0,
            start_line: 1,
            heading_end_line: 0,
            body_end_line: last,
            end_line: last,
            parent: None,
        });
    }
    let base = sections.len();
    let mut stack: Vec<(u8, u32)> = Vec::new();
    for (i, (level, start, heading_end, title)) in headings.iter().enumerate() {
        let body_end = headings.get(i + 1).map(|h| h.1 - 1).unwrap_or(total);
        let end = headings[i + 1..]
            .iter()
            .find(|h| h.0 <= *level)
            .map(|h| h.1 - 1)
            .unwrap_or(total);
        while stack.last().is_some_and(|(l, _)| *l >= *level) {
            stack.pop();
        }
        let parent = stack.last().map(|(_, idx)| *idx);
        let idx = (base + i) as u32;
        stack.push((*level, idx));
        sections.push(SectionInfo {
            title: if title.is_empty() {
                file_stem.to_string()
            } else {
                title.clone()
            },
            level: *level,
            start_line: *start,
            heading_end_line: *heading_end,
            body_end_line: body_end.max(*heading_end),
            end_line: end.max(*heading_end),
            parent,
        });
    }
    sections
}

/// Cuts a title to [`MAX_TITLE_CHARS`] characters.
fn cap_title(title: String) -> String {
    match title.char_indices().nth(MAX_TITLE_CHARS) {
        Some((at, _)) => format!("{}…", &title[..at]),
        None => title,
    }
}

fn heading_level(level: HeadingLevel) -> u8 {
    match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

/// The single section of a JSON file.
pub fn json_section(text: &str, file_name: &str) -> SectionInfo {
    let total = line_count(text).max(1);
    SectionInfo {
        title: file_name.to_string(),
        level: 0,
        start_line: 1,
        heading_end_line: 0,
        body_end_line: total,
        end_line: total,
        parent: None,
    }
}

/// The searchable text of a JSON document: one `key.path: value` line per
/// scalar, so keys and values are indexed without braces and quotes.
/// Invalid JSON is indexed as raw text.
pub fn flatten_json(text: &str) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(value) => {
            let mut out = String::with_capacity(text.len());
            flatten_into(&value, &mut String::new(), &mut out, 0);
            out
        }
        Err(_) => text.to_string(),
    }
}

fn flatten_into(value: &Value, path: &mut String, out: &mut String, depth: usize) {
    if depth > 64 {
        return;
    }
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                flatten_into(child, path, out, depth + 1);
                path.truncate(len);
            }
        }
        Value::Array(items) => {
            for item in items {
                flatten_into(item, path, out, depth + 1);
            }
        }
        scalar => {
            out.push_str(path);
            out.push_str(": ");
            match scalar {
                Value::String(s) => out.push_str(s),
                other => out.push_str(&other.to_string()),
            }
            out.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_nest_and_own_lines_until_the_next_heading() {
        let text = "# 総則\n対象です。\n## 例外\nこの場合は対象外です。\n### 参照\n別表を参照。\n";
        let s = parse_markdown(text, "rules");
        assert_eq!(s.len(), 3);
        assert_eq!(
            (s[0].start_line, s[0].body_end_line, s[0].end_line),
            (1, 2, 6)
        );
        assert_eq!(
            (s[1].start_line, s[1].body_end_line, s[1].end_line),
            (3, 4, 6)
        );
        assert_eq!(s[2].parent, Some(1));
        assert_eq!(s[1].title, "例外");
    }

    #[test]
    fn fenced_code_and_front_matter_are_not_headings() {
        let text = "---\ntitle: x\n---\nintro\n```\n# not a heading\n```\n# Real\nbody\n";
        let s = parse_markdown(text, "doc");
        let titles: Vec<_> = s.iter().map(|s| s.title.as_str()).collect();
        assert_eq!(titles, ["doc", "Real"]);
        assert_eq!(s[1].start_line, 8);
    }

    #[test]
    fn heading_less_file_is_one_section_and_setext_is_supported() {
        let s = parse_markdown("just text\nmore\n", "plain");
        assert_eq!(s.len(), 1);
        assert_eq!((s[0].title.as_str(), s[0].end_line), ("plain", 2));
        let s = parse_markdown("Title\n=====\nbody\n", "x");
        assert_eq!(
            (s[0].title.as_str(), s[0].start_line, s[0].heading_end_line),
            ("Title", 1, 2)
        );
    }

    #[test]
    fn headings_and_titles_are_bounded() {
        let many: String = (0..MAX_HEADINGS_PER_FILE + 50)
            .map(|i| format!("# h{i}\n"))
            .collect();
        let s = parse_markdown(&many, "x");
        assert_eq!(s.len(), MAX_HEADINGS_PER_FILE);
        // The last kept section owns the rest of the file.
        let total = line_count(&many);
        assert_eq!(s.last().map(|x| x.body_end_line), Some(total));
        let long = format!("# {}\nbody\n", "長".repeat(5000));
        let s = parse_markdown(&long, "x");
        assert_eq!(s[0].title.chars().count(), MAX_TITLE_CHARS + 1);
        assert!(s[0].title.ends_with('…'));
    }

    #[test]
    fn json_is_flattened_to_key_value_lines() {
        let flat = flatten_json(r#"{"title":"支払い","items":[{"code":"K1"}]}"#);
        assert!(flat.contains("title: 支払い"));
        assert!(flat.contains("items.code: K1"));
    }
}
