//! The client hooks' use cases (`baton hook`): what the agent's own client
//! asks baton before and after each tool call, when the person sends a
//! prompt, and when the agent wants to end its turn — for the run **bound
//! to that client session**, never another one. The adapter
//! (`crates/baton/src/hook_cmd.rs`) reads each client's JSON into a
//! [`HookInput`] and writes the [`Outcome`] in the client's own shape;
//! the decisions about one call are the engine's (`baton_engine::scope`).
//!
//! * [`pre_tool`] — allow or refuse a tool call under the bound run's
//!   phase scope; apply the person's answer typed in the chat when the
//!   agent asks for the next step.
//! * [`post_tool`] — bind the session when a baton tool names a run;
//!   compare the working tree after a watched command.
//! * [`prompt_submitted`] — the person's prompt: their answer to the
//!   question the run waits at, if it is one.
//! * [`stop`] — the agent may end its turn only when the run waits for a
//!   person, has ended, or nothing is outstanding.
//! * [`session_started`] — remind a resumed session of its run.
//! * [`secrets::refusal`] — refuse, in any session, a call naming baton's
//!   key, the person's configuration or the dashboard's token.
//! * [`tree::still_changed`] — what a watched command left outside the
//!   scope and nobody reverted yet.
//!
//! With no run bound every hook allows at once (one `stat` of the session
//! file). While a run is bound, a decision that cannot be made (unreadable
//! state) refuses writes and says how a person lifts it.

pub mod binding;
pub mod chat;
mod enforce;
pub mod guard;
mod guarded;
pub mod hold;
mod input;
pub mod outside;
mod paths;
pub mod rules;
pub mod secrets;
pub mod tree;

use chrono::Utc;
use serde_json::Value;

use baton_engine::scope::{self, Call, Target, Verdict};
use baton_state::{Actor, WorkspaceState};
use baton_workflow::ScopeTable;

use crate::Services;
use crate::pipeline::answer::{AnswerArgs, answer_question, pending_question};
use binding::{CachedScope, ChatAnswer, Session, StopBlocks, Violation, Watch};
pub use enforce::{ENFORCEMENT_KEY, Enforcement, enforcement_off, set_enforcement};
pub use input::{HookInput, ToolCall};
use paths::target;

/// At most this many consecutive blocks of one outstanding step before the
/// stop guard lets the turn end (Claude Code itself ends it after 8).
pub const MAX_STOP_BLOCKS: u32 = 3;

/// At most this many commands of one session are watched at once (the
/// client runs parallel calls; a call whose report never comes is dropped
/// first).
pub const MAX_WATCHES: usize = 32;

/// What the hook answers, in client-neutral terms.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Go ahead; `context` is added for the model (or shown to the person
    /// when the turn ends).
    Allow {
        /// Text for the model, if any.
        context: Option<String>,
    },
    /// Go ahead with this tool input instead.
    Rewrite {
        /// The new tool input.
        input: Value,
        /// Text for the model.
        context: String,
    },
    /// Refuse the tool call; the reason goes to the model.
    Deny {
        /// Why, and what to do instead.
        reason: String,
    },
    /// After a call, or at a stop: the model must go on; the reason tells
    /// it what to do.
    Block {
        /// What to do.
        reason: String,
    },
}

impl Outcome {
    fn allow() -> Outcome {
        Outcome::Allow { context: None }
    }
}

/// The run bound to the input's session, loaded; `Ok(None)` when none is
/// bound or it has ended.
struct Bound {
    session: Session,
    ws: baton_state::WorkspaceRef,
    state: WorkspaceState,
}

/// Why the hooks cannot decide for a bound session.
fn unreadable(ws: &str, why: &str) -> String {
    format!(
        "baton cannot read run {ws} bound to this session ({why}), so it refuses changes until it can. A person fixes the run (see `baton show {ws}`), or releases this session from it by deleting its file under .baton/sessions/ in their own terminal."
    )
}

/// Loads the bound run. `Err(message)` when a run is bound but cannot be
/// read (the caller fails closed).
fn bound(svc: &Services, input: &HookInput) -> Result<Option<Bound>, String> {
    let root = &svc.config.repo_root;
    let session = match binding::load(root, &input.session) {
        Ok(Some(s)) => s,
        Ok(None) => return Ok(None),
        Err(e) => return Err(unreadable("(unknown)", &e.to_string())),
    };
    let ws = svc
        .store
        .resolve(&session.workspace)
        .map_err(|e| unreadable(&session.workspace, &e.to_string()))?;
    let state = svc
        .store
        .load(&ws)
        .map_err(|e| unreadable(&session.workspace, &e.to_string()))?;
    if state.current_phase_status.is_terminal() {
        return Ok(None);
    }
    if enforcement_off(&state) {
        return Ok(None);
    }
    Ok(Some(Bound { session, ws, state }))
}

/// The scope data of the bound run's definition — the one the run is
/// pinned to, never a project file changed since. Kept in the session file
/// under the definition's key, so only the first call after binding (or
/// after a new baton changed the built-in) parses the definition.
fn scope_table_of(svc: &Services, b: &Bound) -> Result<ScopeTable, String> {
    let key = rules::definition_key(&b.state);
    if let (Some(key), Some(cached)) = (&key, &b.session.scope)
        && cached.key == *key
    {
        return Ok(cached.table.clone());
    }
    let def = svc
        .run_definition(&b.state)
        .map_err(|e| unreadable(&b.session.workspace, &e.message))?;
    let table = def.scope_table();
    if let Some(key) = key {
        // A cache that cannot be written only costs the next call time.
        let kept = CachedScope {
            key,
            table: table.clone(),
        };
        let _ = binding::modify(&svc.config.repo_root, &b.session.session, |s| {
            s.scope = Some(kept)
        });
    }
    Ok(table)
}

fn rules_of(svc: &Services, b: &Bound) -> Result<(scope::Rules, rules::Step), String> {
    let table = scope_table_of(svc, b)?;
    let step = rules::step_of(&b.state);
    let mut rules = rules::rules_from_table(
        &table,
        &b.state,
        &b.ws,
        &svc.config.repo_root,
        svc.store.specs_root(),
        &step,
    );
    if let Some(v) = &b.session.violation {
        rules.revertable = v.paths.clone();
        if v.guard && v.paths.iter().any(|p| p == guard::HEAD_KEY) {
            rules.head_before = guard::head_in(&v.before);
        }
    }
    Ok((rules, step))
}

/// Before a tool call.
pub fn pre_tool(svc: &Services, input: &HookInput) -> Outcome {
    let Some(tool) = &input.tool else {
        return Outcome::allow();
    };
    let b = match bound(svc, input) {
        Ok(Some(b)) => b,
        Ok(None) => return Outcome::allow(),
        Err(message) => {
            return match tool {
                ToolCall::Other { name } if !writes_by_name(name) => Outcome::allow(),
                _ => Outcome::Deny { reason: message },
            };
        }
    };
    let (rules, _step) = match rules_of(svc, &b) {
        Ok(r) => r,
        Err(message) => return Outcome::Deny { reason: message },
    };
    let root = svc.config.repo_root.clone();
    if tool.name() == "mcp__baton__pipeline_next_action" {
        if let Some(outcome) = apply_chat_answer(svc, input, &b) {
            return outcome;
        }
        if let Some(reason) = unreverted(svc, &b, &rules) {
            return Outcome::Deny { reason };
        }
        return Outcome::allow();
    }
    // A run's control files are baton's to read and write (reads too: the
    // agent sees a run through baton's tools).
    if !matches!(tool, ToolCall::Write { .. }) {
        let control: Vec<String> = baton_workflow::CONTROL_FILES
            .iter()
            .map(|p| p.replace("{specs}", &rules.specs_dir))
            .collect();
        let own = matches!(tool, ToolCall::Shell { command, .. } if scope::is_handed_out(&rules, command));
        if let Some(reason) = secrets::control_refusal(&root, &control, input, own) {
            return Outcome::Deny { reason };
        }
    }
    let verdict = match tool {
        ToolCall::Write { paths, .. } => {
            let targets = paths.iter().map(|p| target(&root, &input.cwd, p)).collect();
            scope::decide(&rules, &Call::Write(targets))
        }
        ToolCall::Shell { command, .. } => {
            // A patch run from the shell (Codex applies `apply_patch <<'EOF'`
            // itself): the files it names are writes too.
            let patched = if command.contains("apply_patch") || command.contains("applypatch") {
                patch_paths(command)
            } else {
                Vec::new()
            };
            let targets: Vec<Target> = patched
                .iter()
                .map(|p| target(&root, &input.cwd, p))
                .collect();
            match scope::decide(&rules, &Call::Write(targets)) {
                Verdict::Allow => scope::decide(&rules, &Call::Shell(command)),
                refused => refused,
            }
        }
        ToolCall::Other { name } => scope::decide(&rules, &Call::Tool(name)),
    };
    // A command of a phase that may change the repository runs programs
    // the line does not show: HEAD and the protected files are compared
    // after it (the run's own handed-out command aside).
    // A client that names no call (Cursor's shell hook) reports nothing
    // after it: nothing to compare then.
    let guarded = input.tool_use_id.is_some()
        && matches!((&verdict, tool), (Verdict::Allow, ToolCall::Shell { command, .. })
            if !rules.strict() && !scope::is_handed_out(&rules, command));
    // Every shell command of a bound session — whatever it runs — has the
    // run's state compared after it (outside::changed_outside).
    let shell = input.tool_use_id.is_some() && matches!(tool, ToolCall::Shell { .. });
    match verdict {
        Verdict::Allow if !guarded && !shell => Outcome::allow(),
        Verdict::Deny(reason) => Outcome::Deny {
            reason: format!("baton: {reason}"),
        },
        Verdict::Allow | Verdict::Watch => {
            let watched = matches!(verdict, Verdict::Watch);
            let watch = Watch {
                call: input.tool_use_id.clone().unwrap_or_default(),
                tree: if guarded {
                    guard::snapshot(&root, &rules.protected_user_paths())
                } else if watched {
                    tree::snapshot(&root)
                } else {
                    Vec::new()
                },
                guard: guarded,
                state: shell.then(|| outside::fingerprint(&b.ws.dir)),
                state_only: !guarded && !watched,
            };
            let kept = |s: &mut Session| {
                // Calls whose report never came (a killed tool) do not pile up.
                if s.watches.len() >= MAX_WATCHES {
                    s.watches.drain(..=s.watches.len() - MAX_WATCHES);
                }
                s.watches.push(watch)
            };
            if let Err(e) = binding::modify(&root, &input.session, kept) {
                return Outcome::Deny {
                    reason: unreadable(&b.session.workspace, &e.to_string()),
                };
            }
            if shell {
                outside::command_started(svc, &b.ws, input.tool_use_id.as_deref().unwrap_or(""));
            }
            Outcome::allow()
        }
    }
}

/// Whether a tool with this name writes (for failing closed on tools whose
/// input the adapter did not read as a write).
fn writes_by_name(name: &str) -> bool {
    !name.starts_with("mcp__baton__")
        && !matches!(
            name,
            "Read" | "Grep" | "Glob" | "LS" | "ToolSearch" | "TodoWrite" | "WebSearch" | "WebFetch"
        )
}

/// A change a watched command left outside the scope and that is still
/// there: the reason to refuse going on.
fn unreverted(svc: &Services, b: &Bound, rules: &scope::Rules) -> Option<String> {
    let violation = b.session.violation.as_ref()?;
    let root = &svc.config.repo_root;
    let still = tree::still_changed(root, violation);
    if still.is_empty() {
        let _ = binding::modify(root, &b.session.session, |s| s.violation = None);
        return None;
    }
    Some(format!(
        "baton: `{}` changed {} outside the scope of {} ({}); revert {} (e.g. `git checkout -- <file>` for a tracked file, delete a new one) before the run goes on.",
        violation.command,
        still.join(", "),
        rules.phase,
        rules.phase_label,
        if still.len() == 1 { "it" } else { "them" }
    ))
}

/// The person's answer typed in the chat, applied when the agent asks for
/// the next step of the bound run (after checking the client's transcript).
fn apply_chat_answer(svc: &Services, input: &HookInput, b: &Bound) -> Option<Outcome> {
    let chat = b.session.chat_answer.clone()?;
    let asked_ws = input.tool_input["workspace"].as_str().unwrap_or_default();
    let same_run = svc
        .store
        .resolve(asked_ws)
        .is_ok_and(|ws| ws.dir == b.ws.dir);
    if !same_run {
        return None;
    }
    let root = &svc.config.repo_root;
    let forget = || {
        let _ = binding::modify(root, &b.session.session, |s| s.chat_answer = None);
    };
    // The question must still be the one the person answered.
    let question = pending_question(svc, &b.ws.display).ok().flatten();
    if question.as_ref().is_none_or(|q| q.name != chat.question) {
        forget();
        return None;
    }
    if let Some(given) = input.tool_input["user_response"].as_str() {
        let options: Vec<String> = question
            .as_ref()
            .map(|q| q.options.clone())
            .unwrap_or_default();
        let theirs = chat::answer_in(&chat.answer, &options);
        let agents = chat::answer_in(given, &options);
        if agents.is_none() || agents != theirs {
            return Some(Outcome::Deny {
                reason: format!(
                    "baton: the person answered {:?} in the chat, not {given:?}. Call pipeline_next_action with workspace {} and user_response {:?}, or without user_response.",
                    chat.answer, b.ws.display, chat.answer
                ),
            });
        }
    }
    match chat::confirm(
        chat.transcript.as_deref(),
        &chat.prompt,
        chat.prompt_id.as_deref(),
    ) {
        chat::Confirmation::Confirmed | chat::Confirmation::NoTranscript => {}
        chat::Confirmation::NotFound(why) => {
            forget();
            return Some(Outcome::Deny {
                reason: format!(
                    "baton: the answer {:?} was not recorded: {why}. Ask the person to type their answer again in the chat, or to run `baton answer {} {}` in their own terminal.",
                    chat.answer, b.ws.display, chat.answer
                ),
            });
        }
    }
    let reply = answer_question(
        svc,
        AnswerArgs {
            workspace: b.ws.display.clone(),
            answer: chat.answer.clone(),
        },
        Actor::person(PROMPT_CHANNEL),
    );
    forget();
    match reply {
        Ok(reply) => {
            let mut rewritten = input.tool_input.clone();
            if let Some(map) = rewritten.as_object_mut() {
                map.remove("user_response");
            }
            Some(Outcome::Rewrite {
                input: rewritten,
                context: format!(
                    "baton recorded the person's answer from the chat: {} = {} (by {}). The run is at {} ({}).",
                    reply.question,
                    reply.answer,
                    reply.by,
                    reply.current_phase,
                    reply.current_phase_status
                ),
            })
        }
        Err(e) => Some(Outcome::Deny {
            reason: format!(
                "baton: the person's answer could not be recorded: {}",
                e.message
            ),
        }),
    }
}

/// The channel of a person's answer typed in the client's chat.
pub const PROMPT_CHANNEL: &str = "prompt";

/// After a tool call.
pub fn post_tool(svc: &Services, input: &HookInput) -> Outcome {
    let Some(tool) = &input.tool else {
        return Outcome::allow();
    };
    let root = svc.config.repo_root.clone();
    if tool.name().starts_with("mcp__baton__") {
        return bind_from_baton_reply(svc, input);
    }
    // The run's state first, read from the session's own watch: a forged
    // state may say the run ended or its hooks are off.
    if let Some(outcome) = state_after_command(svc, input, tool) {
        return outcome;
    }
    let Ok(Some(b)) = bound(svc, input) else {
        return Outcome::allow();
    };
    // An edit the client reports after making it (Cursor's afterFileEdit):
    // outside the scope it is recorded, and the run does not go on until
    // it is reverted.
    if let ToolCall::Write { paths, name } = tool {
        let Ok((rules, _)) = rules_of(svc, &b) else {
            return Outcome::allow();
        };
        let refused: Vec<String> = paths
            .iter()
            .filter_map(|p| match target(&root, &input.cwd, p) {
                t @ Target::Repo(_) => scope::write_refusal(&rules, &t).map(|_| t),
                _ => None,
            })
            .filter_map(|t| match t {
                Target::Repo(p) => Some(p),
                Target::Outside(_) => None,
            })
            .collect();
        if refused.is_empty() {
            return Outcome::allow();
        }
        let violation = Violation {
            paths: refused.clone(),
            before: Vec::new(),
            command: name.clone(),
            at: Utc::now(),
            until_clean: true,
            guard: false,
        };
        let _ = binding::modify(&root, &input.session, |s| s.violation = Some(violation));
        return Outcome::Block {
            reason: format!(
                "baton: {name} changed {} outside the scope of {}; revert it (git checkout -- <file>) — run {} does not go on while the change is there.",
                refused.join(", "),
                rules.phase,
                b.ws.display
            ),
        };
    }
    let call = input.tool_use_id.clone().unwrap_or_default();
    let Some(watch) = b.session.watches.iter().find(|w| w.call == call).cloned() else {
        return Outcome::allow();
    };
    let Ok((rules, _)) = rules_of(svc, &b) else {
        return Outcome::allow();
    };
    if watch.guard {
        let command = match tool {
            ToolCall::Shell { command, .. } => command.clone(),
            other => other.name().to_string(),
        };
        return match guarded::command_ended(
            &root,
            &input.session,
            &b.ws.display,
            &rules,
            &command,
            &watch,
        ) {
            Some(reason) => Outcome::Block { reason },
            None => Outcome::allow(),
        };
    }
    let after = tree::snapshot(&root);
    let changed: Vec<String> = tree::changed(&watch.tree, &after)
        .into_iter()
        .filter(|p| !rules.own_files.contains(p))
        .filter(|p| {
            !scope::paths::is_within(p, &format!("{}/", b.ws.display)) || !is_control(&rules, p)
        })
        .collect();
    let command = match tool {
        ToolCall::Shell { command, .. } => command.clone(),
        other => other.name().to_string(),
    };
    let violation = (!changed.is_empty()).then(|| Violation {
        paths: changed.clone(),
        before: watch.tree.clone(),
        command: command.chars().take(300).collect(),
        at: Utc::now(),
        until_clean: false,
        guard: false,
    });
    let found = violation.is_some();
    let _ = binding::modify(&root, &input.session, |s| {
        s.watches.retain(|w| w.call != call);
        if let Some(v) = violation {
            s.violation = Some(v);
        }
    });
    if !found {
        Outcome::allow()
    } else {
        Outcome::Block {
            reason: format!(
                "baton: this command changed {} outside the scope of {} ({}): {}. Revert {} now (e.g. `git checkout -- <file>`, delete new files); run {} does not go on while the change is there.",
                changed.join(", "),
                rules.phase,
                rules.phase_label,
                if rules.own_files.is_empty() {
                    "the phase writes no file".to_string()
                } else {
                    format!("the phase writes only {}", rules.own_files.join(", "))
                },
                if changed.len() == 1 { "it" } else { "them" },
                b.ws.display
            ),
        }
    }
}

/// After a shell command: holds the run when its state changed outside
/// baton while the command ran ([`outside`]); forgets a watch that only
/// compared the state. `None`: go on with the other checks.
fn state_after_command(svc: &Services, input: &HookInput, tool: &ToolCall) -> Option<Outcome> {
    let root = &svc.config.repo_root;
    let call = input.tool_use_id.as_deref()?;
    let session = binding::load(root, &input.session).ok().flatten()?;
    let watch = session.watches.iter().find(|w| w.call == call)?;
    let before = watch.state.as_deref()?;
    let ws = svc.store.resolve(&session.workspace).ok()?;
    let files = outside::changed_outside(svc, &ws, before);
    let forget = |s: &mut Session| s.watches.retain(|w| w.call != call);
    if !files.is_empty() {
        let _ = binding::modify(root, &input.session, forget);
        let command = match tool {
            ToolCall::Shell { command, .. } => command.clone(),
            other => other.name().to_string(),
        };
        let reason = outside::hold(svc, &ws, &command, &files);
        outside::command_ended(svc, &ws, call);
        return Some(Outcome::Block { reason });
    }
    let command = match tool {
        ToolCall::Shell { command, .. } => command.clone(),
        other => other.name().to_string(),
    };
    let during = outside::found_during(svc, &ws, &command);
    outside::command_ended(svc, &ws, call);
    if let Some(reason) = during {
        let _ = binding::modify(root, &input.session, forget);
        return Some(Outcome::Block { reason });
    }
    if watch.state_only {
        let _ = binding::modify(root, &input.session, forget);
        return Some(Outcome::allow());
    }
    None
}

fn is_control(rules: &scope::Rules, path: &str) -> bool {
    rules
        .protected
        .iter()
        .any(|p| scope::paths::matches(p, path))
}

/// Binds the session to the run a baton tool's reply (or input) names,
/// unless it is bound to another run that has not ended.
fn bind_from_baton_reply(svc: &Services, input: &HookInput) -> Outcome {
    let root = &svc.config.repo_root;
    // Claude Code passes the tool's text; Codex the MCP result
    // (`content`, `structuredContent`).
    let from_blocks = |blocks: &Value| {
        blocks
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|b| b["text"].as_str())
            .find_map(|t| serde_json::from_str::<Value>(t).ok())
    };
    let reply = match &input.tool_response {
        Value::String(text) => serde_json::from_str::<Value>(text).unwrap_or(Value::Null),
        blocks @ Value::Array(_) => from_blocks(blocks).unwrap_or(Value::Null),
        Value::Object(map) if map.contains_key("structuredContent") => {
            map["structuredContent"].clone()
        }
        Value::Object(map) if map.contains_key("content") => {
            from_blocks(&map["content"]).unwrap_or(Value::Null)
        }
        other => other.clone(),
    };
    let named = [
        reply["workspace"].as_str(),
        input.tool_input["workspace"].as_str(),
    ];
    let Some((ws, state)) = named.into_iter().flatten().find_map(|w| {
        let ws = svc.store.resolve(w).ok()?;
        let state = svc.store.load(&ws).ok()?;
        Some((ws, state))
    }) else {
        return Outcome::allow();
    };
    if state.current_phase_status.is_terminal() {
        return Outcome::allow();
    }
    let existing = binding::load(root, &input.session).ok().flatten();
    if let Some(current) = &existing {
        if current.workspace == ws.display {
            return Outcome::allow();
        }
        let still_active = svc
            .store
            .resolve(&current.workspace)
            .and_then(|w| svc.store.load(&w))
            .is_ok_and(|s| !s.current_phase_status.is_terminal());
        if still_active {
            return Outcome::Allow {
                context: Some(format!(
                    "baton: this session stays bound to run {} until it ends; the hooks keep enforcing that run's scope, not {}'s.",
                    current.workspace, ws.display
                )),
            };
        }
    }
    // The run's scope data is compiled now, off the path of every later
    // tool call.
    let scope = rules::definition_key(&state).and_then(|key| {
        let def = svc.run_definition(&state).ok()?;
        Some(CachedScope {
            key,
            table: def.scope_table(),
        })
    });
    let session = Session {
        session: input.session.clone(),
        client: input.client.clone(),
        workspace: ws.display.clone(),
        bound_at: Some(Utc::now()),
        scope,
        ..Session::default()
    };
    match binding::modify(root, &input.session, |s| *s = session) {
        Ok(_) => Outcome::allow(),
        Err(e) => Outcome::Block {
            reason: format!(
                "baton could not bind this session to run {} ({e}); its hooks cannot enforce the run's scope. Tell the person.",
                ws.display
            ),
        },
    }
}

/// The person's prompt.
pub fn prompt_submitted(svc: &Services, input: &HookInput) -> Outcome {
    let Some(prompt) = &input.prompt else {
        return Outcome::allow();
    };
    let Ok(Some(b)) = bound(svc, input) else {
        return Outcome::allow();
    };
    let Ok(Some(question)) = pending_question(svc, &b.ws.display) else {
        return Outcome::allow();
    };
    if question.answered_by != "person" {
        return Outcome::allow();
    }
    let root = &svc.config.repo_root;
    match chat::answer_in(prompt, &question.options) {
        Some(answer) => {
            let kept = ChatAnswer {
                question: question.name.clone(),
                answer: answer.clone(),
                prompt: prompt.clone(),
                prompt_id: input.prompt_id.clone(),
                transcript: input.transcript_path.clone(),
                at: Utc::now(),
            };
            if let Err(e) = binding::modify(root, &input.session, |s| s.chat_answer = Some(kept)) {
                return Outcome::Allow {
                    context: Some(format!(
                        "baton could not keep the person's answer ({e}); ask them to run `baton answer {} {answer}` in their own terminal.",
                        b.ws.display
                    )),
                };
            }
            Outcome::Allow {
                context: Some(format!(
                    "baton: the person answered {} in this chat: {answer:?}. Call pipeline_next_action with workspace {} now (user_response {answer:?} is accepted as theirs); baton records it as the person's answer.",
                    question.name, b.ws.display
                )),
            }
        }
        None => Outcome::Allow {
            context: Some(format!(
                "baton: run {} waits for the person to answer {} (options: {}). If this message is their answer, it must be the answer alone, e.g. `{}` or `revise: <what to change>`; otherwise show them the question again and wait.",
                b.ws.display,
                question.name,
                question.options.join(", "),
                question.options.first().cloned().unwrap_or_default()
            )),
        },
    }
}

/// The agent wants to end its turn (`subagent`: a sub-agent does).
pub fn stop(svc: &Services, input: &HookInput, subagent: bool) -> Outcome {
    let Ok(Some(b)) = bound(svc, input) else {
        return Outcome::allow();
    };
    if b.session.step_agent {
        // An agent `baton run` started for one step ends its turn when its
        // work is written; the driver takes the next step.
        return Outcome::allow();
    }
    if let Some(hold) = &b.state.hold {
        // A held run waits for a person (outside::release).
        return Outcome::Allow {
            context: Some(format!(
                "baton: run {} is held: {}",
                b.ws.display, hold.message
            )),
        };
    }
    let root = &svc.config.repo_root;
    let step = rules::step_of(&b.state);
    if let Some(question) = &step.waiting_for {
        if subagent {
            return Outcome::allow();
        }
        let how = pending_question(svc, &b.ws.display)
            .ok()
            .flatten()
            .and_then(|q| q.how_to_answer)
            .unwrap_or_default();
        return Outcome::Allow {
            context: Some(format!(
                "baton: run {} waits for a person to answer {question}. {how} You can also type the answer here in the chat (e.g. `approve`, or `revise: <what to change>`).",
                b.ws.display
            )),
        };
    }
    if subagent {
        // A sub-agent's turn ends as it likes: Claude Code 2.1.328 tells
        // sub-agents to return reports as text (it refuses their writes of
        // report files), and the orchestrator writes the output file; the
        // orchestrator's own stop guard holds the run.
        return Outcome::allow();
    }
    let key = step
        .action_id
        .clone()
        .unwrap_or_else(|| b.state.current_phase.clone());
    let count = match &b.session.stop_blocks {
        Some(s) if s.step == key => s.count,
        _ => 0,
    };
    if input.stop_hook_active && count >= MAX_STOP_BLOCKS {
        let _ = binding::modify(root, &input.session, |s| s.stop_blocks = None);
        return Outcome::Allow {
            context: Some(format!(
                "baton: the turn ends with run {} unfinished ({}). Resume it with /baton-pipeline {}.",
                b.ws.display, step.describe, b.ws.display
            )),
        };
    }
    let _ = binding::modify(root, &input.session, |s| {
        s.stop_blocks = Some(StopBlocks {
            step: key,
            count: count + 1,
        })
    });
    let next = match &step.action_id {
        Some(id) => format!(
            "Action {id} ({}) is outstanding: carry it out, then call pipeline_next_action with workspace {}, previous_action_complete: true and previous_action_id: {id:?}.",
            step.describe, b.ws.display
        ),
        None => format!(
            "Call pipeline_next_action with workspace {} for the next step.",
            b.ws.display
        ),
    };
    Outcome::Block {
        reason: format!(
            "baton: run {} is not finished and nobody was asked anything. {next} Stop only when baton returns a question for the person or `done`.",
            b.ws.display
        ),
    }
}

/// A session starts or resumes.
pub fn session_started(svc: &Services, input: &HookInput) -> Outcome {
    let Ok(Some(b)) = bound(svc, input) else {
        return Outcome::allow();
    };
    Outcome::Allow {
        context: Some(format!(
            "baton: this session works on run {} ({} is {}). Continue it with pipeline_next_action and workspace {}; its hooks enforce the phase's scope.",
            b.ws.display,
            b.state.current_phase,
            b.state.current_phase_status.as_str(),
            b.ws.display
        )),
    }
}

/// The files a Codex patch names (`*** Add File:`, `*** Update File:`,
/// `*** Delete File:`, `*** Move to:`), headers read with their whitespace
/// trimmed as Codex reads them.
pub fn patch_paths(patch: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in patch.lines() {
        let line = line.trim();
        for prefix in [
            "*** Add File:",
            "*** Update File:",
            "*** Delete File:",
            "*** Move to:",
        ] {
            if let Some(rest) = line.strip_prefix(prefix) {
                let path = rest.trim();
                if !path.is_empty() {
                    out.push(path.to_string());
                }
            }
        }
    }
    out
}
