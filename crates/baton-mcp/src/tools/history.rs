//! The `history` group: what past runs teach and what they cost
//! (docs/history.md); adapters over [`baton_usecases::history`]. Not part
//! of any workflow's default tools: select it with `--tools history`.

use serde_json::Value;

use baton_usecases::history as uc;
use uc::{
    Dashboard, DashboardArgs, EstimateArgs, EstimateReply, Friction, FrictionArgs, Patterns,
    PatternsArgs, ReindexArgs, Reindexed, RunSummary, SearchArgs, SearchReply, SummaryArgs,
};

use super::{ToolSpec, input_schema, output_schema, reply};
use crate::args::{describe_value, parse};
use crate::context::AppContext;
use crate::error::ToolError;

/// The group's name.
pub const GROUP: &str = "history";

/// The tools of this group.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "history_search",
            group: GROUP,
            description: "Past runs most like a text (request, design or words), with the words that matched.",
            input_schema: input_schema::<SearchArgs>,
            output_schema: output_schema::<SearchReply>,
            read_only: true,
            destructive: false,
            handler: search_tool,
        },
        ToolSpec {
            name: "history_patterns",
            group: GROUP,
            description: "Review findings of past runs merged into patterns, most frequent and recent first.",
            input_schema: input_schema::<PatternsArgs>,
            output_schema: output_schema::<Patterns>,
            read_only: true,
            destructive: false,
            handler: patterns_tool,
        },
        ToolSpec {
            name: "history_friction",
            group: GROUP,
            description: "Friction points from past improvement reports, heaviest first.",
            input_schema: input_schema::<FrictionArgs>,
            output_schema: output_schema::<Friction>,
            read_only: true,
            destructive: false,
            handler: friction_tool,
        },
        ToolSpec {
            name: "history_reindex",
            group: GROUP,
            description: "Rebuild the run history from every workspace.",
            input_schema: input_schema::<ReindexArgs>,
            output_schema: output_schema::<Reindexed>,
            read_only: false,
            destructive: false,
            handler: reindex_tool,
        },
        ToolSpec {
            name: "analytics_summary",
            group: GROUP,
            description: "One run's tokens, cost, time, loops, findings and phases.",
            input_schema: input_schema::<SummaryArgs>,
            output_schema: output_schema::<RunSummary>,
            read_only: true,
            destructive: false,
            handler: summary_tool,
        },
        ToolSpec {
            name: "analytics_dashboard",
            group: GROUP,
            description: "Repository dashboard: runs, pass rates, loops, time, tokens and cost by effort and phase.",
            input_schema: input_schema::<DashboardArgs>,
            output_schema: output_schema::<Dashboard>,
            read_only: true,
            destructive: false,
            handler: dashboard_tool,
        },
        ToolSpec {
            name: "analytics_estimate",
            group: GROUP,
            description: "Tokens, minutes and cost (p50/p90) to expect for a request, from similar past runs.",
            input_schema: input_schema::<EstimateArgs>,
            output_schema: output_schema::<EstimateReply>,
            read_only: true,
            destructive: false,
            handler: estimate_tool,
        },
    ]
}

fn search_tool(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    check_limit(&arguments)?;
    reply(uc::search(ctx, parse(arguments)?)?)
}

fn patterns_tool(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    check_limit(&arguments)?;
    reply(uc::patterns(ctx, parse(arguments)?)?)
}

fn friction_tool(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    check_limit(&arguments)?;
    reply(uc::friction(ctx, parse(arguments)?)?)
}

/// `limit` of a wrong type, refused with its real range (1 to
/// [`uc::MAX_LIMIT`]) rather than the range of the integer it is read into;
/// a whole number is left to the use case, which checks the range.
fn check_limit(arguments: &Value) -> Result<(), ToolError> {
    match arguments.get("limit") {
        None | Some(Value::Null) => Ok(()),
        Some(v) if v.as_u64().is_some_and(|n| n <= u64::from(u32::MAX)) => Ok(()),
        Some(v) => Err(ToolError::invalid(
            "limit",
            format!(
                "limit must be a whole number from 1 to {} (leave it out for the default), got {}",
                uc::MAX_LIMIT,
                describe_value(v)
            ),
        )),
    }
}

fn reindex_tool(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    reply(uc::reindex(ctx, parse(arguments)?)?)
}

fn summary_tool(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    reply(uc::summary(ctx, parse(arguments)?)?)
}

fn dashboard_tool(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    reply(uc::dashboard(ctx, parse(arguments)?)?)
}

fn estimate_tool(ctx: &AppContext, arguments: Value) -> Result<Value, ToolError> {
    reply(uc::estimate(ctx, parse(arguments)?)?)
}
