//! A person's answer typed in the chat: reading it from their prompt, and
//! finding that prompt in the client's own transcript before baton records
//! it as theirs.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::Value;

/// Words a person may type for an option, beside the option itself, in
/// the languages baton's questions are asked in (English, Japanese).
const SYNONYMS: &[(&str, &[&str])] = &[
    (
        "proceed",
        &[
            "approve",
            "approved",
            "yes",
            "ok",
            "go",
            "承認",
            "承認します",
            "進める",
            "進めて",
            "はい",
            "ok です",
        ],
    ),
    (
        "approve",
        &[
            "proceed",
            "approved",
            "yes",
            "ok",
            "承認",
            "承認します",
            "はい",
        ],
    ),
    ("revise", &["修正", "差し戻し", "やり直し"]),
    ("abandon", &["中止", "破棄", "やめる"]),
    ("skip", &["スキップ", "飛ばす"]),
    ("retry", &["再試行", "リトライ", "もう一度"]),
    ("done", &["完了", "済み", "終わった"]),
];

/// The answer `prompt` gives to a question with `options`, as baton
/// records it (`proceed`, `revise: make it paginated`), or `None` when
/// the prompt is not an answer. The whole prompt must be the answer: an
/// option (or its word in the question's language) alone, or `revise`
/// followed by what to change.
pub fn answer_in(prompt: &str, options: &[String]) -> Option<String> {
    let text = prompt.trim();
    if text.is_empty() || text.len() > 16 * 1024 {
        return None;
    }
    // The first word (up to `:`, `：`, a space or a line break) and the rest.
    let split = text.find([':', '：', ' ', '\n', '\u{3000}']);
    let (head, rest) = match split {
        Some(i) => {
            let sep_len = text[i..].chars().next().map(char::len_utf8).unwrap_or(1);
            (&text[..i], text[i + sep_len..].trim())
        }
        None => (text, ""),
    };
    let head = head
        .trim_end_matches(['.', '!', '。', '！', '、'])
        .to_lowercase();
    let option = options.iter().find(|o| {
        let o = o.to_lowercase();
        o == head
            || SYNONYMS
                .iter()
                .any(|(opt, words)| *opt == o && words.contains(&head.as_str()))
    })?;
    if rest.is_empty() {
        // Trailing punctuation alone is still the bare answer.
        return Some(option.clone());
    }
    // Free text only with `revise`; anything else after an option means the
    // prompt is a sentence, not an answer.
    (option == "revise").then(|| format!("revise: {rest}"))
}

/// Whether the client's transcript holds `prompt` as a message the person
/// typed (not a tool result, not a message the client made itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confirmation {
    /// Found as the person's own message.
    Confirmed,
    /// The client named no transcript (Codex, Cursor): nothing to check.
    NoTranscript,
    /// Not found, with why.
    NotFound(String),
}

/// How much of the end of a transcript is read.
const TAIL_BYTES: u64 = 4 * 1024 * 1024;

/// Looks for the person's message `prompt` (with the client's `prompt_id`
/// when given) in the client's transcript at `path`: Claude Code's
/// (`type: user` entries) or Codex's rollout (`response_item` user
/// messages).
pub fn confirm(path: Option<&Path>, prompt: &str, prompt_id: Option<&str>) -> Confirmation {
    let Some(path) = path else {
        return Confirmation::NoTranscript;
    };
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => {
            return Confirmation::NotFound(format!(
                "the client's transcript {} cannot be read ({e})",
                path.display()
            ));
        }
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > TAIL_BYTES {
        let _ = file.seek(SeekFrom::Start(len - TAIL_BYTES));
    }
    let mut bytes = Vec::new();
    if let Err(e) = file.take(TAIL_BYTES).read_to_end(&mut bytes) {
        return Confirmation::NotFound(format!("the transcript cannot be read ({e})"));
    }
    let text = String::from_utf8_lossy(&bytes);
    for line in text.lines().rev() {
        let Ok(entry) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        // Codex's rollout: the person's message as a user message item.
        if entry["type"] == "response_item" {
            let item = &entry["payload"];
            let typed = item["type"] == "message"
                && item["role"] == "user"
                && item["content"].as_array().is_some_and(|parts| {
                    parts.len() == 1
                        && parts[0]["type"] == "input_text"
                        && parts[0]["text"]
                            .as_str()
                            .is_some_and(|t| t.trim() == prompt.trim())
                });
            if typed {
                return Confirmation::Confirmed;
            }
            continue;
        }
        if entry["type"] != "user"
            || entry["isMeta"] == true
            || entry["isSidechain"] == true
            || !entry["toolUseResult"].is_null()
        {
            continue;
        }
        if let Some(id) = prompt_id
            && entry["promptId"].as_str().is_some_and(|p| p != id)
        {
            continue;
        }
        if message_text(&entry["message"]["content"]).is_some_and(|t| t.trim() == prompt.trim()) {
            return Confirmation::Confirmed;
        }
    }
    Confirmation::NotFound(format!(
        "the client's transcript {} holds no message of the person that says {:?}",
        path.display(),
        prompt.chars().take(200).collect::<String>()
    ))
}

/// A user message's text: a string, or its one text block (several blocks
/// or other kinds are not a typed prompt).
fn message_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => {
            let texts: Vec<&str> = blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .collect();
            (blocks.len() == texts.len() && texts.len() == 1).then(|| texts[0].to_string())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn answers_are_whole_prompts() {
        let o = opts(&["proceed", "revise", "abandon"]);
        assert_eq!(answer_in("approve", &o).as_deref(), Some("proceed"));
        assert_eq!(answer_in("  Approve. ", &o).as_deref(), Some("proceed"));
        assert_eq!(answer_in("proceed", &o).as_deref(), Some("proceed"));
        assert_eq!(answer_in("承認", &o).as_deref(), Some("proceed"));
        assert_eq!(answer_in("承認します。", &o).as_deref(), Some("proceed"));
        assert_eq!(
            answer_in("revise: paginate the API", &o).as_deref(),
            Some("revise: paginate the API")
        );
        assert_eq!(
            answer_in("修正: APIをページ分割する", &o).as_deref(),
            Some("revise: APIをページ分割する")
        );
        assert_eq!(
            answer_in("修正：APIをページ分割する", &o).as_deref(),
            Some("revise: APIをページ分割する")
        );
        assert_eq!(answer_in("abandon", &o).as_deref(), Some("abandon"));
        for not in [
            "approve the design but change X",
            "should I approve?",
            "what does the design say",
            "",
            "<task-notification>approve</task-notification>",
            "skip",
        ] {
            assert_eq!(answer_in(not, &o), None, "{not}");
        }
        let gate = opts(&["done", "skip", "abandon"]);
        assert_eq!(answer_in("完了", &gate).as_deref(), Some("done"));
        assert_eq!(answer_in("approve", &gate), None);
    }

    #[test]
    fn the_transcript_must_hold_the_persons_message() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let lines = [
            r#"{"type":"user","promptId":"p1","message":{"role":"user","content":"start"}}"#,
            r#"{"type":"user","promptId":"p1","toolUseResult":{"x":1},"message":{"role":"user","content":[{"type":"tool_result","content":"approve"}]}}"#,
            r#"{"type":"user","promptId":"p2","isMeta":true,"message":{"role":"user","content":"approve"}}"#,
            r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"approve"}]}}"#,
        ];
        std::fs::write(&path, lines.join("\n")).unwrap();
        assert!(matches!(
            confirm(Some(&path), "approve", Some("p2")),
            Confirmation::NotFound(_)
        ));
        assert!(matches!(
            confirm(Some(&path), "approve", None),
            Confirmation::NotFound(_)
        ));
        let mut more = lines.join("\n");
        more.push_str("\n{\"type\":\"user\",\"promptId\":\"p3\",\"message\":{\"role\":\"user\",\"content\":\"approve\"}}\n");
        std::fs::write(&path, more).unwrap();
        assert_eq!(
            confirm(Some(&path), "approve", Some("p3")),
            Confirmation::Confirmed
        );
        assert!(matches!(
            confirm(Some(&path), "approve", Some("p9")),
            Confirmation::NotFound(_)
        ));
        assert_eq!(confirm(None, "approve", None), Confirmation::NoTranscript);
        assert!(matches!(
            confirm(Some(&dir.path().join("missing")), "approve", None),
            Confirmation::NotFound(_)
        ));
    }
}
