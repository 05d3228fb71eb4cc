//! A run's state changed by something other than baton while an agent's
//! command ran — a test, a script, anything the command started — is
//! detected after the command, and the run is held.
//!
//! Every state baton writes is recorded by its witness
//! (`baton_state::witness`), in the person's state folder, outside every
//! folder an agent's sandbox may write. After a shell command of a session
//! bound to a run, under the workspace lock (a write of baton's in
//! progress is never half seen), each state file must be what baton last
//! wrote — a person's `baton answer` in their terminal, the dashboard,
//! the agent's own MCP calls in parallel are all baton's writes. Anything
//! else, an older state of baton's put back included, was written behind
//! baton's back: the run is held ([`Hold`], code [`CODE`]), the state baton
//! last wrote is put back from the journal (a forged answer or phase is
//! not counted; a person's answer baton recorded during the command
//! stays), a tamper note is recorded for `baton show`, `run_overview` and
//! the dashboard, a `phase-fail` event carries the code and message (the
//! event log, notifications), and the run's tools refuse to go on until a
//! person releases it (`baton enforce release`, a terminal only). While
//! the command runs (recorded by the witness from the hook before it to
//! the compare after it: [`command_started`], [`command_ended`]) any
//! change of baton's finds the same first ([`hold_found`]), so a forged
//! state is never built upon and then passed off as baton's write.
//!
//! A run the witness has no record of (last written by an older baton, or
//! where the witness folder could not be written) is compared as before the
//! witness: the files changed during the command must equal the journal's
//! last record of them.
//!
//! Not detected: a program that can write the witness folder (Codex's
//! `danger-full-access`, Claude Code with its sandbox off, a process
//! outside the client), a change made and undone while the command ran
//! (docs/clients.md "Trust model").

use std::path::Path;

use chrono::Utc;
use sha2::{Digest, Sha256};

use baton_state::journal::{self, Op};
use baton_state::store::{LIVE_STATE_FILE, STATE_FILE};
use baton_state::{Actor, Hold, TamperNote, WorkspaceRef, WorkspaceState};

use baton_events::EventKind;

pub use super::hold::{CODE, hold_found};

use crate::events::Happened;
use crate::{Error, ErrorCode, Services};

/// The files compared.
const FILES: [&str; 2] = [STATE_FILE, LIVE_STATE_FILE];

/// The most of a journal read back (a guard against a damaged file).
const MAX_JOURNAL: u64 = 64 * 1024 * 1024;

fn read(dir: &Path, name: &str) -> Option<Vec<u8>> {
    baton_fs::read_file_nofollow(&dir.join(name), baton_state::store::MAX_STATE_BYTES).ok()
}

/// The digest of one state file's bytes (`-` when it is absent).
fn digest(dir: &Path, name: &str) -> String {
    match read(dir, name) {
        Some(bytes) => Sha256::digest(&bytes)
            .iter()
            .take(16)
            .map(|b| format!("{b:02x}"))
            .collect(),
        None => "-".to_string(),
    }
}

/// The fingerprint of the run's state files in `dir`: one digest per file.
pub fn fingerprint(dir: &Path) -> String {
    FILES
        .iter()
        .map(|name| digest(dir, name))
        .collect::<Vec<_>>()
        .join(",")
}

/// The journal's last word on each state file: its bytes (`Some`) or its
/// removal (`None`); files the journal does not name are absent.
fn journaled(dir: &Path) -> Vec<(String, Option<Vec<u8>>)> {
    let Ok(bytes) = baton_fs::read_file_nofollow(&dir.join(journal::JOURNAL_FILE), MAX_JOURNAL)
    else {
        return Vec::new();
    };
    let (records, _) = journal::read_all(&bytes);
    let mut last: Vec<(String, Option<Vec<u8>>)> = Vec::new();
    for record in records {
        for op in record.ops {
            let (name, content) = match op {
                Op::Write(name, data) => (name, Some(data)),
                Op::Remove(name) => (name, None),
            };
            last.retain(|(n, _)| *n != name);
            last.push((name, content));
        }
    }
    last
}

/// After a command: the state files of `ws` that are not what baton last
/// wrote, per its witness; for a run the witness has no record of, those
/// that changed since `before` (a [`fingerprint`]) and are not the
/// journal's last record of them (with no journal, as with
/// `BATON_FSYNC=off`, every change counts). Empty when every file is
/// baton's own.
pub fn changed_outside(svc: &Services, ws: &WorkspaceRef, before: &str) -> Vec<String> {
    match svc.store.outside_changes(ws) {
        Ok(Some(files)) => files,
        Ok(None) => changed_per_journal(&ws.dir, before),
        Err(e) => {
            tracing::warn!(
                "{}: the state could not be compared with its witness ({e})",
                ws.display
            );
            changed_per_journal(&ws.dir, before)
        }
    }
}

/// [`changed_outside`] without a witness record of the run: the files that
/// changed since `before` and are not the journal's last record of them.
fn changed_per_journal(dir: &Path, before: &str) -> Vec<String> {
    let before: Vec<&str> = before.split(',').collect();
    let changed: Vec<&str> = FILES
        .iter()
        .enumerate()
        .filter(|(i, name)| before.get(*i).is_none_or(|b| *b != digest(dir, name)))
        .map(|(_, name)| *name)
        .collect();
    if changed.is_empty() {
        return Vec::new();
    }
    let journaled = journaled(dir);
    changed
        .into_iter()
        .filter(|name| {
            let baton_s = journaled
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, content)| content.clone());
            baton_s != Some(read(dir, name))
        })
        .map(str::to_string)
        .collect()
}

/// The state baton last wrote for the file the store reads, from the
/// journal (`None`: the journal does not have it).
fn last_written(dir: &Path) -> Option<WorkspaceState> {
    let name = if dir.join(LIVE_STATE_FILE).is_file() {
        LIVE_STATE_FILE
    } else {
        STATE_FILE
    };
    let (_, content) = journaled(dir).into_iter().find(|(n, _)| n == name)?;
    let text = String::from_utf8(content?).ok()?;
    WorkspaceState::from_json(&text).ok()
}

/// Holds the run in `ws`: puts back the state baton last wrote (when the
/// journal has it), records the hold and a tamper note. Returns the
/// message for the agent.
pub fn hold(svc: &Services, ws: &WorkspaceRef, command: &str, files: &[String]) -> String {
    let now = Utc::now();
    let command: String = command.chars().take(300).collect();
    // With a witness record the store's own change puts back what baton
    // last wrote ([`hold_found`]); without, the journal's last record.
    let witnessed = matches!(svc.store.outside_changes(ws), Ok(Some(_)));
    let restored = if witnessed {
        None
    } else {
        last_written(&ws.dir)
    };
    let put_back = witnessed || restored.is_some();
    let message = format!(
        "{} of run {} changed outside baton while the agent's command `{command}` ran; {}. The run is held until a person checks it and runs `baton enforce release {}` in their terminal.",
        files.join(" and "),
        ws.display,
        if put_back {
            "baton put back the state it last wrote (what the command wrote is not counted)"
        } else {
            "baton could not put back the state it last wrote (its journal does not have it): check the run's answers and phase"
        },
        ws.display
    );
    let hold = Hold {
        code: CODE.to_string(),
        at: now,
        command: command.clone(),
        message: message.clone(),
    };
    let written = svc.store.update(ws, now, |state| {
        if let Some(r) = &restored {
            *state = r.clone();
        }
        // This hold says more than the one the change found (same time).
        if state.tampering.last().is_some_and(|n| n.at == now) {
            state.tampering.pop();
        }
        state.tampering.push(TamperNote {
            at: now,
            phase: state.current_phase.clone(),
            message: message.clone(),
        });
        state.hold = Some(hold.clone());
        Ok::<_, Error>(())
    });
    let agent = format!(
        "baton ({CODE}): {message} Tell the person, and stop: nothing goes on for this run until they release it."
    );
    match written {
        Ok(updated) => {
            // Published as the phase's failure, with the hold's message.
            let phase = updated.state.current_phase.clone();
            svc.after_write(
                ws,
                &updated.state,
                vec![Happened::Event(
                    EventKind::PhaseFail,
                    phase,
                    Some(format!("{CODE}: {message}")),
                    None,
                )],
            );
            agent
        }
        Err(e) => format!("{agent} (baton could not record the hold: {e})"),
    }
}

/// After a command whose state compared clean: a hold a change of baton's
/// recorded while the command ran ([`hold_found`]: the state was changed
/// outside baton, then baton wrote) is the command's — it is named in the
/// hold, and the agent is told as by [`hold`]. `None`: no such hold.
pub fn found_during(svc: &Services, ws: &WorkspaceRef, command: &str) -> Option<String> {
    let state = svc.store.load(ws).ok()?;
    let found = state.hold.as_ref().filter(|h| h.command.is_empty())?;
    let command: String = command.chars().take(300).collect();
    let message = found.message.clone();
    let _ = svc.store.update(ws, Utc::now(), |state| {
        if let Some(h) = state.hold.as_mut().filter(|h| h.command.is_empty()) {
            h.command = command.clone();
        }
        Ok::<_, Error>(())
    });
    Some(format!(
        "baton ({CODE}): {message} (found while the agent's command `{command}` ran) Tell the person, and stop: nothing goes on for this run until they release it."
    ))
}

/// Before an agent's shell command of a session bound to run `ws`: the
/// witness records it running, so that until it ends a change of baton's
/// (the person answering, the agent's parallel calls) never builds on a
/// state changed outside baton ([`hold_found`]).
pub fn command_started(svc: &Services, ws: &WorkspaceRef, call: &str) {
    if let Some(witness) = svc.store.witness()
        && let Err(e) = witness.command_started(&ws.name, call)
    {
        tracing::warn!(
            "{}: the witness could not record the command ({e})",
            ws.display
        );
    }
}

/// After the command and its compare: the witness records it ended.
pub fn command_ended(svc: &Services, ws: &WorkspaceRef, call: &str) {
    if let Some(witness) = svc.store.witness()
        && let Err(e) = witness.command_ended(&ws.name, call)
    {
        tracing::warn!(
            "{}: the witness could not record the command's end ({e})",
            ws.display
        );
    }
}

/// The refusal of any step of a held run (`blocked`, rule [`CODE`]).
pub fn held_error(ws: &str, hold: &Hold) -> Error {
    Error::new(
        ErrorCode::Blocked,
        format!(
            "run {ws} is held: {} (agent: tell the person and wait; person: check the run with `baton show {ws}`, then run `baton enforce release {ws}`)",
            hold.message
        ),
    )
    // The rule is written out (it is `CODE`) so docs/errors.md's check
    // (it::error_codes) finds it where it is emitted.
    .with_details(serde_json::json!({"rule": "state_changed_outside_baton", "since": hold.at, "command": hold.command}))
}

/// A person releases a held run: the hold is removed and the release
/// recorded with who did it. Returns the workspace as shown.
pub fn release(svc: &Services, workspace: &str, by: &Actor) -> Result<String, Error> {
    let ws = svc.store.resolve(workspace)?;
    let now = Utc::now();
    let display = ws.display.clone();
    svc.store.update(&ws, now, |state| {
        let Some(hold) = state.hold.take() else {
            return Err(Error::new(
                ErrorCode::InvalidState,
                format!("run {display} is not held: nothing to release"),
            ));
        };
        state.tampering.push(TamperNote {
            at: now,
            phase: state.current_phase.clone(),
            message: format!(
                "released by {} (held since {} for `{}`)",
                by.label(),
                hold.at.format("%Y-%m-%d %H:%M UTC"),
                hold.command
            ),
        });
        Ok(())
    })?;
    Ok(display)
}
