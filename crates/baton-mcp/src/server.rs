//! The MCP server: `tools/list` and `tools/call` over the tool catalogue.

use std::sync::{Arc, OnceLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;

use crate::context::AppContext;
use crate::error::{ErrorCode, ToolError};
use crate::tools::ToolSpec;

/// What every session is told at initialisation, whatever tools it has.
const INSTRUCTIONS_BASE: &str = "baton keeps a development workflow on rails: you do the work, baton decides what comes next and checks what came back. \
Each piece of work lives in a workspace folder (.specs/YYYYMMDD-slug/) whose state.json baton owns.";

/// One paragraph per use, shown when the server exposes its first tool.
const INSTRUCTIONS_BY_TOOL: &[(&str, &str)] = &[
    (
        "pipeline_init",
        "Pipeline: call pipeline_init with the user's request exactly as given, then pipeline_init_with_context (the person confirms the effort; send user_confirmation). \
Then loop: pipeline_next_action returns one action; carry it out exactly and call pipeline_next_action again with previous_action_complete=true \
until its type is done. A checkpoint or human gate is the person's: show it with how_to_answer and wait; send user_response only when answered_by is agent. \
Never choose or reorder steps yourself.",
    ),
    (
        "startIssueWorkflow",
        "Issue work: startIssueWorkflow, then for each phase do its tasks, write its artifact, and call completePhase with the evidence; \
getCurrentPhase tells where you are. Other workflows: workflow_start, then completePhase with the workspace.",
    ),
    (
        "manual_find",
        "Manuals: manual_find, then manual_hits and manual_read.",
    ),
    (
        "phase_start",
        "Recovery by hand: state_resume_info says where a workspace stands; init, phase_start, phase_complete, phase_fail, checkpoint, skip_phase and abandon move it.",
    ),
];

/// The closing paragraph: how refusals look.
const INSTRUCTIONS_ERRORS: &str = "A refused call is an isError result whose text is JSON {code, message, details}: the message says what to do next. \
A tool this server does not expose answers unknown_tool, naming the tool profile that has it.";

/// The instructions for a server exposing `tools`: the paragraphs of the
/// uses those tools serve (the default profile gets the pipeline's).
pub fn instructions(tools: &[ToolSpec]) -> String {
    let mut text = String::from(INSTRUCTIONS_BASE);
    for (tool, paragraph) in INSTRUCTIONS_BY_TOOL {
        if tools.iter().any(|t| t.name == *tool) {
            text.push(' ');
            text.push_str(paragraph);
        }
    }
    text.push(' ');
    text.push_str(INSTRUCTIONS_ERRORS);
    text
}

/// The MCP handler. Cheap to clone (one per HTTP session).
#[derive(Clone)]
pub struct BatonServer {
    ctx: Arc<AppContext>,
    tools: Arc<Vec<ToolSpec>>,
    instructions: Arc<str>,
    listed: Arc<OnceLock<Vec<Tool>>>,
    admission: Arc<crate::admission::Admission>,
    /// Quick calls run on the thread that runs the protocol
    /// ([`BatonServer::running_quick_calls_itself`]).
    quick_calls_inline: bool,
}

/// The calls a stdio server runs on its protocol thread when each is the
/// only call running ([`BatonServer::running_quick_calls_itself`]): the
/// pipeline's own steps, well under a millisecond of work (the
/// confirmation, which makes the run, and every other tool run on the
/// blocking pool as before).
const QUICK_CALLS: &[&str] = &[
    "pipeline_init",
    "pipeline_next_action",
    "pipeline_report_result",
];

impl std::fmt::Debug for BatonServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatonServer")
            .field("tools", &self.tools.len())
            .finish()
    }
}

impl BatonServer {
    /// A server exposing `tools`.
    pub fn new(ctx: Arc<AppContext>, tools: Vec<ToolSpec>) -> BatonServer {
        let wait = std::time::Duration::from_millis(ctx.config.lock_timeout_ms);
        BatonServer {
            ctx,
            instructions: instructions(&tools).into(),
            tools: Arc::new(tools),
            listed: Arc::new(OnceLock::new()),
            // A call waits for a place at most as long as for a lock.
            admission: Arc::new(crate::admission::Admission::new(wait)),
            quick_calls_inline: false,
        }
    }

    /// The same server running a quick call (`pipeline_next_action`,
    /// `pipeline_report_result`, `pipeline_init`) on the protocol's own
    /// thread when it is the only call running, instead of handing it to
    /// the blocking pool and back: two thread wake-ups fewer per call. For
    /// a stdio server, which serves one client on one thread. Such a call
    /// never waits there before it has written: a lock another process
    /// holds, `git`, the run history's first load or a manual search sends
    /// it to the pool, having changed nothing (`baton_usecases::without_waiting`),
    /// so the protocol goes on reading the client's messages meanwhile.
    /// After its write it waits only as any change does (the sync window
    /// when the disk is behind; the witness's and the event log's locks,
    /// held for microseconds). Not in team mode, whose calls may wait for
    /// the database.
    pub fn running_quick_calls_itself(mut self) -> BatonServer {
        self.quick_calls_inline = !self.ctx.team.enabled();
        self
    }

    /// The shared context.
    pub fn context(&self) -> &Arc<AppContext> {
        &self.ctx
    }

    /// Runs one tool call to completion (used by the MCP path and by tests).
    pub async fn call(&self, name: &str, arguments: Value) -> Result<Value, ToolError> {
        let Some(spec) = self.tools.iter().find(|t| t.name == name) else {
            return Err(unknown_tool(name, &self.tools));
        };
        let handler = spec.handler;
        let ctx = Arc::clone(&self.ctx);
        // A bounded number of calls per workspace and in all: a lock held
        // elsewhere never ties up the whole server.
        let _admitted = self
            .admission
            .admit(crate::admission::key_of(&arguments).as_deref())
            .await?;
        if self.quick_calls_inline && QUICK_CALLS.contains(&name) && self.admission.alone() {
            let again = arguments.clone();
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                baton_usecases::without_waiting(|| handler(&ctx, again))
            }));
            match ran {
                Ok(Some(result)) => return result.map_err(ToolError::for_agent),
                // A lock another process holds: waited for on the pool.
                Ok(None) => {}
                Err(_) => {
                    return Err(ToolError::new(
                        ErrorCode::Internal,
                        format!("tool {name} panicked"),
                    ));
                }
            }
        }
        // Handlers do blocking file I/O (locks, fsync): keep them off the async workers.
        match tokio::task::spawn_blocking(move || handler(&ctx, arguments)).await {
            // Use-case messages are a person's by default; the agent reads these.
            Ok(result) => result.map_err(ToolError::for_agent),
            Err(e) => Err(ToolError::new(
                ErrorCode::Internal,
                format!("tool {name} panicked: {e}"),
            )),
        }
    }
}

/// The result of a call that succeeded: its JSON as `structuredContent` and
/// as the text content — what [`CallToolResult::structured`] makes, with the
/// text written straight to bytes rather than through `Display` (a reply
/// with a prompt is ~12 KB; `Display` writes it piece by piece through a
/// formatter, about twice the work).
fn structured(value: Value) -> CallToolResult {
    let text = serde_json::to_string(&value).unwrap_or_else(|_| value.to_string());
    let mut result = CallToolResult::structured(Value::Null);
    result.content = vec![ContentBlock::text(text)];
    result.structured_content = Some(value);
    result
}

/// `unknown_tool` for `name`: which tools are exposed and, when baton has the
/// tool in another profile, how to start the server so it is exposed.
fn unknown_tool(name: &str, exposed: &[ToolSpec]) -> ToolError {
    let exposed: Vec<&str> = exposed.iter().map(|t| t.name).collect();
    let profiles = crate::tools::profiles_of(name);
    let message = match profiles.first() {
        Some(profile) => format!(
            "{name} is not exposed by this server: it belongs to the {profile} tool profile. \
             Restart baton with `--tools {profile}` (or BATON_TOOLS={profile}; `all` exposes every tool), \
             or use the tools listed in details.exposed."
        ),
        None => format!(
            "baton has no tool named {name:?}; the tools this server exposes are listed in details.exposed"
        ),
    };
    let mut details = serde_json::json!({ "exposed": exposed });
    if !profiles.is_empty() {
        details["profiles"] = serde_json::json!(profiles);
    }
    ToolError::new(ErrorCode::UnknownTool, message).with_details(details)
}

impl ServerHandler for BatonServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("baton", self.ctx.version))
            .with_instructions(self.instructions.to_string())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools = self
            .listed
            .get_or_init(|| self.tools.iter().map(ToolSpec::to_tool).collect());
        Ok(ListToolsResult::with_all_items(tools.clone()))
    }

    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, McpError> {
        // rmcp hands over as "custom" both unknown methods and known ones
        // whose params did not parse (a tools/call without a name, …).
        Err(crate::protocol::custom_request_error(
            &request.method,
            request.params.as_ref(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let arguments = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        let workspace = arguments["workspace"].as_str().map(str::to_string);
        let mut outcome = self.call(&request.name, arguments).await;
        // A question only a person may answer: ask the client's user.
        if request.name == "pipeline_next_action"
            && let (Ok(reply), Some(ws)) = (&outcome, workspace)
        {
            outcome =
                crate::elicit::answer_through_client(&self.ctx, &context.peer, &ws, reply.clone())
                    .await;
        }
        let result = match outcome {
            Ok(value) => structured(value),
            // A refusal carries no structuredContent: clients validate
            // structuredContent against the tool's outputSchema even on
            // errors (the TypeScript SDK does), and the error object is not
            // the tool's output. The code, message and details travel as the
            // JSON text the agent reads.
            Err(error) => CallToolResult::error(vec![ContentBlock::text(error.to_json_text())]),
        };
        Ok(result.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_structured_result_is_what_rmcp_makes_of_it() {
        for value in [
            serde_json::json!({
                "type": "spawn_agent",
                "prompt": "## Task\n\n\"quoted\" \\ — ünïcödé \u{1}\t✓",
                "n": [1, 2.5, null, true, -3],
                "empty": {},
            }),
            serde_json::json!([]),
            serde_json::json!("text"),
        ] {
            assert_eq!(
                serde_json::to_string(&structured(value.clone())).unwrap(),
                serde_json::to_string(&CallToolResult::structured(value)).unwrap()
            );
        }
    }
}
