//! The witness's cost on the store's write path, for `valgrind
//! --tool=callgrind` (instructions, independent of the machine's load):
//! `cargo run --release -p baton-state --example witness_cost -- plain|witnessed N`
//! runs N state changes of one workspace (a state of about 20 KB) (`BATON_FSYNC=off`-like: no
//! journal sync) with or without a witness; the difference of the two
//! runs' instructions divided by N is one change's cost (docs/performance.md).

use baton_state::integrity::StateSigner;
use baton_state::{StateStore, WorkspaceState};

/// Tags like the real signer's (the same length), without its HMAC:
/// the witness reads the tag, it never hashes the state.
struct FixedTag;
impl StateSigner for FixedTag {
    fn sign(&self, text: &str) -> Option<String> {
        Some(format!("hmac-sha256:00000000:{:064x}", text.len()))
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let witnessed = args.get(1).is_some_and(|a| a == "witnessed");
    let n: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(100);
    let dir = tempfile::tempdir_in(std::env::current_dir().expect("cwd")).expect("tempdir");
    let mut store = StateStore::new(dir.path(), &dir.path().join(".specs"))
        .with_signer(std::sync::Arc::new(FixedTag))
        .with_durability(false);
    if witnessed {
        store = store.with_witness(&dir.path().join("witness"));
    }
    let ws = store.resolve("20260101-cost").expect("name");
    let mut state = WorkspaceState::fresh(
        "forge",
        "phase-1",
        "cost",
        &ws.display,
        "cost",
        chrono::Utc::now(),
    );
    // A run's state some phases in: about 20 KB.
    state.extra.insert(
        "ballast".into(),
        serde_json::Value::String("x".repeat(20_000)),
    );
    store.create(&ws, &state).expect("create");
    for i in 0..n {
        store
            .update(&ws, chrono::Utc::now(), |s| {
                s.current_phase = format!("phase-{}", i % 7);
                Ok::<_, ()>(())
            })
            .expect("update");
    }
}
