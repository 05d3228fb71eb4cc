//! What the store's integration tests share.

/// A signer that tags with a fixed key: its tag is the text's length and a
/// checksum, enough to tell any edit here.
pub struct TestSigner;

impl baton_state::integrity::StateSigner for TestSigner {
    fn sign(&self, text: &str) -> Option<String> {
        let sum = text.bytes().fold(0u64, |acc, b| {
            acc.wrapping_mul(31).wrapping_add(u64::from(b))
        });
        Some(format!("test:key1:{}-{sum:016x}", text.len()))
    }
}
