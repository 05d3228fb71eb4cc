//! Manual files as text: bytes decoded as UTF-8 (invalid bytes replaced,
//! the byte-order mark dropped).

/// Decodes file bytes as UTF-8 (lossy), dropping a byte-order mark.
pub(crate) fn decode_text(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    text.strip_prefix('\u{feff}').unwrap_or(&text).to_string()
}
