//! The person's channels from a command line, checked against the
//! witness folder (`baton_state::witness`).
//!
//! An agent's sandbox (Codex's `workspace-write` and `read-only`, Claude
//! Code's Bash sandbox with baton's settings) never lets a program write
//! the person's witness folder. A command that records a person's answer
//! or choice from a terminal (`baton answer`, `baton enforce`, `baton run`
//! answering at its terminal or granting `--auto`, the dashboard) first checks it can: inside a
//! sandbox it refuses at once and writes nothing — a program the agent
//! runs may have made itself a terminal (a pseudo-terminal), and a
//! terminal inside the agent's sandbox is not the person's.

use std::path::Path;

/// Whether this process may record a person's answer: it can write the
/// witness folder. `Err`: the message for the person at this terminal.
pub fn person_may_write() -> Result<(), String> {
    let Some(folder) = baton_config::person::witness_dir() else {
        // No home folder: no witness to keep, nothing to check against.
        return Ok(());
    };
    check_folder(&folder)
}

/// Creates the person's witness folder `folder` (mode 0700) when missing,
/// so that a sandbox can deny writing it before baton wrote there.
pub fn create_folder(folder: &Path) -> std::io::Result<()> {
    baton_state::witness::Witness::check_writable(folder)
}

fn check_folder(folder: &Path) -> Result<(), String> {
    match baton_state::witness::Witness::check_writable(folder) {
        Ok(()) => Ok(()),
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EACCES | libc::EPERM | libc::EROFS)
            ) =>
        {
            Err(format!(
                "this terminal is inside an agent's sandbox: baton cannot write its witness folder {} ({e}), so nothing a person answers here can be told apart from what a program the agent runs would answer. Nothing was recorded. Run the command in a terminal of your own, outside the agent's client.",
                folder.display()
            ))
        }
        Err(e) => Err(format!(
            "baton cannot write its witness folder {} ({e}), where it records what it writes so that a change made behind its back shows; nothing was recorded. Make the folder writable for your user, then run the command again.",
            folder.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_that_cannot_be_written_refuses_with_person_text() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(check_folder(&dir.path().join("witness")), Ok(()));
        let file = dir.path().join("file");
        std::fs::write(&file, "x").unwrap();
        let refused = check_folder(&file.join("witness")).unwrap_err();
        assert!(refused.contains("nothing was recorded"), "{refused}");
    }
}
