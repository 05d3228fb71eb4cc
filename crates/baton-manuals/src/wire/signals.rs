//! Ranking signals attached to candidates and evidences.

use serde::Serialize;

/// Why a candidate ranked where it did (the seed's closed set).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Signal {
    /// A query concept occurs in the section's own heading.
    Heading,
    /// The heading alone covers (nearly) every query concept.
    HeadingFocus,
    /// Every query concept occurs verbatim in the normalised section text.
    Normalized,
    /// Found only by the stage-4 loose search (single-character matching or a wider scope).
    Loose,
    /// The section states exclusions/exceptions (免責, 対象外, not covered …).
    Exceptions,
    /// The late-interaction rerank rescored the candidate.
    LateRerank,
}

impl Signal {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Signal::Heading => "heading",
            Signal::HeadingFocus => "heading_focus",
            Signal::Normalized => "normalized",
            Signal::Loose => "loose",
            Signal::Exceptions => "exceptions",
            Signal::LateRerank => "late_rerank",
        }
    }

    const ALL: [Signal; 6] = [
        Signal::Heading,
        Signal::HeadingFocus,
        Signal::Normalized,
        Signal::Loose,
        Signal::Exceptions,
        Signal::LateRerank,
    ];
}

/// A small set of signals (serialised as the list of its signals in
/// canonical order).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Signals(u8);

impl Serialize for Signals {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(None)?;
        for s in Signal::ALL.into_iter().filter(|s| self.contains(*s)) {
            seq.serialize_element(&s)?;
        }
        seq.end()
    }
}

impl Signals {
    /// Adds a signal.
    pub(crate) fn insert(&mut self, s: Signal) {
        self.0 |= 1 << (s as u8);
    }

    /// Whether the set holds a signal.
    pub(crate) fn contains(self, s: Signal) -> bool {
        self.0 & (1 << (s as u8)) != 0
    }

    /// The signals in canonical order.
    pub(crate) fn to_vec(self) -> Vec<Signal> {
        Signal::ALL
            .into_iter()
            .filter(|s| self.contains(*s))
            .collect()
    }
}
