//! A person's answer typed in the chat: reading it from their prompt, and
//! finding that prompt in the client's own transcript before baton records
//! it as theirs.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::{Duration, Instant};

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

/// How long a missing message is waited for. A client writes its
/// transcript from a queue it flushes on a timer (Claude Code), so on a
/// loaded machine the person's message can reach the file after the hook
/// that asks for it has started: the file is read again whenever it grows,
/// until the message is there or this much time has passed. Only a
/// message that is not there waits (an agent's forged answer is refused
/// this much later); a found one is never delayed.
pub const TRANSCRIPT_WAIT: Duration = Duration::from_secs(5);

/// How often a transcript that holds no such message yet is looked at.
const TRANSCRIPT_POLL: Duration = Duration::from_millis(20);

/// Looks for the person's message `prompt` (with the client's `prompt_id`
/// when given) in the client's transcript at `path`: Claude Code's
/// (`type: user` entries) or Codex's rollout (`response_item` user
/// messages), waiting up to [`TRANSCRIPT_WAIT`] for a client that has not
/// written it yet.
pub fn confirm(path: Option<&Path>, prompt: &str, prompt_id: Option<&str>) -> Confirmation {
    confirm_within(path, prompt, prompt_id, TRANSCRIPT_WAIT)
}

/// [`confirm`], waiting at most `wait` for the message to be written.
pub fn confirm_within(
    path: Option<&Path>,
    prompt: &str,
    prompt_id: Option<&str>,
    wait: Duration,
) -> Confirmation {
    let Some(path) = path else {
        return Confirmation::NoTranscript;
    };
    let until = Instant::now() + wait;
    let mut read_len = None;
    loop {
        let len = std::fs::metadata(path).ok().map(|m| m.len());
        // Read again only when the file changed since the last look.
        if read_len != Some(len) {
            let found = look(path, prompt, prompt_id);
            if !matches!(found, Confirmation::NotFound(_)) || Instant::now() >= until {
                return found;
            }
            read_len = Some(len);
        } else if Instant::now() >= until {
            return look(path, prompt, prompt_id);
        }
        std::thread::sleep(TRANSCRIPT_POLL);
    }
}

/// One look at the transcript at `path` for the person's message.
fn look(path: &Path, prompt: &str, prompt_id: Option<&str>) -> Confirmation {
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
        let now = Duration::ZERO;
        assert!(matches!(
            confirm_within(Some(&path), "approve", Some("p2"), now),
            Confirmation::NotFound(_)
        ));
        assert!(matches!(
            confirm_within(Some(&path), "approve", None, now),
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
            confirm_within(Some(&path), "approve", Some("p9"), now),
            Confirmation::NotFound(_)
        ));
        assert_eq!(confirm(None, "approve", None), Confirmation::NoTranscript);
        assert!(matches!(
            confirm_within(Some(&dir.path().join("missing")), "approve", None, now),
            Confirmation::NotFound(_)
        ));
    }

    /// A client that writes the person's message after the hook started
    /// looking (Claude Code flushes its transcript on a timer): found once
    /// written; a message never written is refused when the wait is over,
    /// not before.
    #[test]
    fn a_message_written_late_is_waited_for_within_a_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(
            &path,
            "{\"type\":\"user\",\"promptId\":\"p1\",\"message\":{\"role\":\"user\",\"content\":\"start\"}}\n",
        )
        .unwrap();
        let writer = {
            let path = path.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(300));
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .unwrap();
                std::io::Write::write_all(
                    &mut f,
                    b"{\"type\":\"user\",\"promptId\":\"p2\",\"message\":{\"role\":\"user\",\"content\":\"approve\"}}\n",
                )
                .unwrap();
            })
        };
        let started = Instant::now();
        assert_eq!(
            confirm_within(Some(&path), "approve", Some("p2"), Duration::from_secs(30)),
            Confirmation::Confirmed
        );
        assert!(started.elapsed() >= Duration::from_millis(250));
        writer.join().unwrap();
        // Never written: refused, after the wait.
        let started = Instant::now();
        assert!(matches!(
            confirm_within(
                Some(&path),
                "approve",
                Some("p3"),
                Duration::from_millis(200)
            ),
            Confirmation::NotFound(_)
        ));
        assert!(started.elapsed() >= Duration::from_millis(200));
    }
}
