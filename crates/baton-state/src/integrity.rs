//! A tag on every `state.json` baton writes, so a change made outside
//! baton shows.
//!
//! The store hands the text it is about to write to a [`StateSigner`] (the
//! use-case layer's: an HMAC with a key kept in the person's own
//! configuration folder, outside every repository) and appends what it
//! returns as the document's last key, `"integrity"`. The tag covers the
//! exact text before it, so any edit — a value changed, the file
//! reformatted, the tag removed or copied — no longer matches.
//! [`split`] takes a file's text apart again for checking. The state itself
//! never carries the key: it is dropped when a file is read.

/// The document key the tag is written under (always the last one).
pub const INTEGRITY_KEY: &str = "integrity";

/// Signs the text of a state the store is about to write.
pub trait StateSigner: Send + Sync {
    /// The tag for `text` (a whole `state.json` as [`crate::WorkspaceState::to_json`]
    /// renders it), or `None` when this process cannot sign (no key).
    fn sign(&self, text: &str) -> Option<String>;
}

/// `text` (pretty JSON ending in `}` and a newline) with `tag` as its last key.
pub fn append(text: &str, tag: &str) -> String {
    let body = text.trim_end();
    let Some(open) = body.strip_suffix('}') else {
        return text.to_string();
    };
    let open = open.trim_end();
    // An empty object has nothing to put a comma after.
    let comma = if open.ends_with('{') { "" } else { "," };
    format!(
        "{open}{comma}\n  \"{INTEGRITY_KEY}\": {}\n}}\n",
        serde_json::Value::String(tag.to_string())
    )
}

/// The text a tagged file was signed over, and its tag; `(text, None)` for
/// a file without one (or with one that is not where baton puts it).
pub fn split(text: &str) -> (String, Option<String>) {
    match split_at(text) {
        Some((at, tag)) => (format!("{}\n}}\n", &text[..at]), Some(tag.to_string())),
        None => (text.to_string(), None),
    }
}

/// Where the tag's line starts in `text`, and the tag, when it is where
/// baton puts it.
fn split_at(text: &str) -> Option<(usize, &str)> {
    let marker = format!(",\n  \"{INTEGRITY_KEY}\": \"");
    let at = text.rfind(&marker)?;
    let rest = &text[at + marker.len()..];
    let end = rest.find('"')?;
    (rest[end..] == *"\"\n}\n").then(|| (at, &rest[..end]))
}

/// What a state file's text says about who wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagCheck {
    /// baton wrote it as it is, with this key.
    Intact,
    /// It carries a tag that does not match: changed outside baton.
    Changed,
    /// It carries no tag.
    Untagged,
    /// Tagged with another key (another person's baton, or a copy).
    OtherKey,
    /// Nothing to check with: no key here, or the file cannot be read.
    Unknown,
}

/// Whether `bytes` (a whole state file) carry an integrity tag.
pub fn tagged(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes).is_ok_and(|t| split_at(t).is_some())
}

/// Checks `text` (a whole state file) against `signer`'s key.
pub fn check_text(signer: &dyn StateSigner, text: &str) -> TagCheck {
    let (original, tag) = split(text);
    // No key: nothing to judge with, tagged or not.
    let Some(mine) = signer.sign(&original) else {
        return TagCheck::Unknown;
    };
    let Some(tag) = tag else {
        return TagCheck::Untagged;
    };
    let id_of = |t: &str| t.split(':').nth(1).map(str::to_string);
    if id_of(&tag) != id_of(&mine) {
        return TagCheck::OtherKey;
    }
    // Compared whole, in constant time over equal lengths.
    let same = tag.len() == mine.len()
        && tag
            .bytes()
            .zip(mine.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
    if same {
        TagCheck::Intact
    } else {
        TagCheck::Changed
    }
}

impl crate::StateStore {
    /// Tags every state this store writes with `signer`'s tag, so a change
    /// made outside baton shows.
    pub fn with_signer(mut self, signer: std::sync::Arc<dyn StateSigner>) -> crate::StateStore {
        self.signer = Some(signer);
        self
    }

    /// The bytes written for `state`: its JSON, tagged when a signer can sign.
    pub(crate) fn render(&self, state: &crate::WorkspaceState) -> Vec<u8> {
        let text = state.to_json();
        match self.signer.as_ref().and_then(|s| s.sign(&text)) {
            Some(tag) => append(&text, &tag).into_bytes(),
            None => text.into_bytes(),
        }
    }

    /// What [`check_text`] says of `bytes` this store has just rendered
    /// ([`crate::StateStore::render`] is the only writer of a state file):
    /// intact when they carry a tag, else unknown (this process has no key
    /// to sign with, so none to check with either).
    pub(crate) fn rendered_check(&self, bytes: &[u8]) -> TagCheck {
        let tagged = std::str::from_utf8(bytes).is_ok_and(|t| split_at(t).is_some());
        if self.signer.is_some() && tagged {
            TagCheck::Intact
        } else {
            TagCheck::Unknown
        }
    }

    /// What [`check_text`] says of `bytes` read from a state file: unknown
    /// without a signer or when they are not text.
    pub(crate) fn check_bytes(&self, bytes: &[u8]) -> TagCheck {
        match (self.signer.as_deref(), std::str::from_utf8(bytes)) {
            (Some(signer), Ok(text)) => check_text(signer, text),
            _ => TagCheck::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_goes_last_and_comes_off_again_exactly() {
        let text = "{\n  \"version\": 3,\n  \"workflow\": \"forge\"\n}\n";
        let tagged = append(text, "hmac-sha256:abcd:0123");
        assert!(tagged.ends_with("\"integrity\": \"hmac-sha256:abcd:0123\"\n}\n"));
        let v: serde_json::Value = serde_json::from_str(&tagged).unwrap();
        assert_eq!(v["workflow"], "forge");
        assert_eq!(
            split(&tagged),
            (text.to_string(), Some("hmac-sha256:abcd:0123".into()))
        );
        // A file without a tag, or reformatted, has none where baton puts it.
        assert_eq!(split(text), (text.to_string(), None));
        let compact = serde_json::to_string(&v).unwrap();
        assert_eq!(split(&compact).1, None);
    }
}
