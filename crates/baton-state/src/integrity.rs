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
    let marker = format!(",\n  \"{INTEGRITY_KEY}\": \"");
    let Some(at) = text.rfind(&marker) else {
        return (text.to_string(), None);
    };
    let rest = &text[at + marker.len()..];
    let Some(end) = rest.find('"') else {
        return (text.to_string(), None);
    };
    if rest[end..] != *"\"\n}\n" {
        return (text.to_string(), None);
    }
    let original = format!("{}\n}}\n", &text[..at]);
    (original, Some(rest[..end].to_string()))
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
