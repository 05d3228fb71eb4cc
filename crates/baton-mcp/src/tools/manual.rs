//! The `manual` group: seed 002's six tools over `baton-manuals`. Raw
//! arguments become the library's typed requests through its
//! `XInput::from_json`, which applies the seed's rules (booleans are
//! booleans, integers ≥ 1, scopes) with their errors, at the MCP boundary.

use serde::Serialize;
use serde_json::Value;

use baton_manuals as m;

use super::{ToolSpec, input_schema, output_schema};
use crate::context::AppContext;
use crate::error::{ErrorCode, ToolError};

/// Shapes a reply, and logs what indexing met on the way (files skipped
/// for their size or kind, index writes that failed; each once).
fn reply<T: Serialize>(
    service: &m::ManualService,
    result: Result<T, m::ManualError>,
) -> Result<Value, ToolError> {
    for warning in service.take_index_warnings() {
        tracing::warn!("manuals: {warning}");
    }
    let value = result.map_err(crate::error::manual_error)?;
    serde_json::to_value(value).map_err(|e| ToolError::new(ErrorCode::Internal, e.to_string()))
}

fn ls(ctx: &AppContext, args: Value) -> Result<Value, ToolError> {
    let s = ctx.manuals()?;
    reply(
        &s,
        m::LsInput::from_json(&args).and_then(|request| s.ls(request)),
    )
}

fn toc(ctx: &AppContext, args: Value) -> Result<Value, ToolError> {
    let s = ctx.manuals()?;
    reply(
        &s,
        m::TocInput::from_json(&args).and_then(|request| s.toc(request)),
    )
}

fn find(ctx: &AppContext, args: Value) -> Result<Value, ToolError> {
    let s = ctx.manuals()?;
    reply(
        &s,
        m::FindInput::from_json(&args).and_then(|request| s.find(request)),
    )
}

fn hits(ctx: &AppContext, args: Value) -> Result<Value, ToolError> {
    let s = ctx.manuals()?;
    reply(
        &s,
        m::HitsInput::from_json(&args).and_then(|request| s.hits(request)),
    )
}

fn read(ctx: &AppContext, args: Value) -> Result<Value, ToolError> {
    let s = ctx.manuals()?;
    reply(
        &s,
        m::ReadInput::from_json(&args).and_then(|request| s.read(request)),
    )
}

fn scan(ctx: &AppContext, args: Value) -> Result<Value, ToolError> {
    let s = ctx.manuals()?;
    reply(
        &s,
        m::ScanInput::from_json(&args).and_then(|request| s.scan(request)),
    )
}

/// The tools of this group.
pub fn tools() -> Vec<ToolSpec> {
    let spec = |name, description, input_schema, output_schema, handler| ToolSpec {
        name,
        group: "manual",
        description,
        input_schema,
        output_schema,
        read_only: true,
        destructive: false,
        handler,
    };
    vec![
        spec(
            "manual_ls",
            m::MANUAL_LS_DESCRIPTION,
            input_schema::<m::LsInput>,
            output_schema::<m::LsOutput>,
            ls,
        ),
        spec(
            "manual_toc",
            m::MANUAL_TOC_DESCRIPTION,
            input_schema::<m::TocInput>,
            output_schema::<m::TocOutput>,
            toc,
        ),
        spec(
            "manual_find",
            m::MANUAL_FIND_DESCRIPTION,
            input_schema::<m::FindInput>,
            output_schema::<m::FindOutput>,
            find,
        ),
        spec(
            "manual_hits",
            m::MANUAL_HITS_DESCRIPTION,
            input_schema::<m::HitsInput>,
            output_schema::<m::HitsOutput>,
            hits,
        ),
        spec(
            "manual_read",
            m::MANUAL_READ_DESCRIPTION,
            input_schema::<m::ReadInput>,
            output_schema::<m::ReadOutput>,
            read,
        ),
        spec(
            "manual_scan",
            m::MANUAL_SCAN_DESCRIPTION,
            input_schema::<m::ScanInput>,
            output_schema::<m::ScanOutput>,
            scan,
        ),
    ]
}
