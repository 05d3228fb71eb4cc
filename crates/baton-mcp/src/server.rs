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

/// Instructions sent to the client at initialisation.
pub const INSTRUCTIONS: &str = "baton keeps a development workflow on rails; you do the work, baton decides what comes next and checks what came back. \
Each piece of work lives in a workspace folder (.specs/YYYYMMDD-slug/) with a state.json that baton owns; phases hand over through Markdown files in that folder. \
Issue work: startIssueWorkflow, then for each phase do its tasks, write its artifact, and call completePhase with the evidence; getCurrentPhase tells where you are. \
Other workflows: workflow_start, then completePhase with the workspace. Step by step: init, phase_start, phase_complete, checkpoint (a person answers), abandon. \
Seed pipeline: pipeline_init, then pipeline_init_with_context. Manuals: manual_find, then manual_hits and manual_read. \
Failures are isError results with a stable code (invalid_parameter, not_found, invalid_state, blocked, ...) and say how to fix the call.";

/// The MCP handler. Cheap to clone (one per HTTP session).
#[derive(Clone)]
pub struct BatonServer {
    ctx: Arc<AppContext>,
    tools: Arc<Vec<ToolSpec>>,
    listed: Arc<OnceLock<Vec<Tool>>>,
    admission: Arc<crate::admission::Admission>,
}

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
            tools: Arc::new(tools),
            listed: Arc::new(OnceLock::new()),
            // A call waits for a place at most as long as for a lock.
            admission: Arc::new(crate::admission::Admission::new(wait)),
        }
    }

    /// The shared context.
    pub fn context(&self) -> &Arc<AppContext> {
        &self.ctx
    }

    /// Runs one tool call to completion (used by the MCP path and by tests).
    pub async fn call(&self, name: &str, arguments: Value) -> Result<Value, ToolError> {
        let Some(spec) = self.tools.iter().find(|t| t.name == name) else {
            let exposed: Vec<&str> = self.tools.iter().map(|t| t.name).collect();
            return Err(ToolError::new(
                ErrorCode::UnknownTool,
                format!("no tool named {name:?} is exposed by this server"),
            )
            .with_details(serde_json::json!({ "exposed": exposed })));
        };
        let handler = spec.handler;
        let ctx = Arc::clone(&self.ctx);
        // A bounded number of calls per workspace and in all: a lock held
        // elsewhere never ties up the whole server.
        let _admitted = self
            .admission
            .admit(crate::admission::key_of(&arguments).as_deref())
            .await?;
        // Handlers do blocking file I/O (locks, fsync): keep them off the async workers.
        match tokio::task::spawn_blocking(move || handler(&ctx, arguments)).await {
            Ok(result) => result,
            Err(e) => Err(ToolError::new(
                ErrorCode::Internal,
                format!("tool {name} panicked: {e}"),
            )),
        }
    }
}

impl ServerHandler for BatonServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("baton", self.ctx.version))
            .with_instructions(INSTRUCTIONS)
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
            Ok(value) => CallToolResult::structured(value),
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
