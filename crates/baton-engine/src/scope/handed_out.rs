//! The command the run handed out, recognised exactly as given.

use super::shell::Script;

/// Whether `script` is exactly `argv` (one simple command, its words as
/// given, no assignment, no writing redirection).
pub(crate) fn as_given(argv: Option<&[String]>, script: &Script) -> bool {
    let Some(argv) = argv else {
        return false;
    };
    if script.commands.len() != 1 || !script.opaque.is_empty() {
        return false;
    }
    let c = &script.commands[0];
    c.assignments.is_empty()
        && c.redirects
            .iter()
            .all(|r| !r.writes() && r.op != "<<" && r.op != "<<-")
        && c.words.len() == argv.len()
        && c.words
            .iter()
            .zip(argv)
            .all(|(w, a)| !w.dynamic && w.text == *a)
}
