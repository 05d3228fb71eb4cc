//! Parsing and validating `manual_find` arguments.

use serde_json::Value;

use super::request::{
    DEFAULT_MAX_CANDIDATES, DEFAULT_TIME_MS, FindRequest, MAX_REQUIRED_TERM_BYTES,
    MAX_REQUIRED_TERMS,
};
use crate::wire::args::{Args, MAX_ID_BYTES, MAX_QUERY_BYTES};
use crate::wire::convert::typed;
use crate::wire::error::ManualError;
use crate::wire::ids as paths;
use crate::wire::types::FindInput;

impl FindInput {
    /// A `manual_find` request from raw JSON arguments, by seed 002's rules
    /// (unknown fields, types, sizes, ids; see docs/manuals.md §2).
    pub fn from_json(args: &Value) -> Result<FindInput, ManualError> {
        parse_find(args)?;
        typed(args, &["budget.max_candidates", "budget.time_ms"], &[])
    }
}

/// A parsed `manual_find` call before the service's defaults.
pub(super) struct ParsedFind {
    request: FindRequest,
    pub(super) manual_id: Option<String>,
    pub(super) use_cache: Option<bool>,
}

impl ParsedFind {
    pub(super) fn resolved(self) -> FindRequest {
        FindRequest {
            manual_id: self.manual_id,
            ..self.request
        }
    }
}

pub(super) fn parse_find(args: &Value) -> Result<ParsedFind, ManualError> {
    {
        let a = Args::new(
            "",
            args,
            &[
                "query",
                "manual_id",
                "expand_scope",
                "only_unscanned_from_trace_id",
                "include_claim_graph",
                "use_cache",
                "budget",
                "required_terms",
            ],
        )?;
        let query = a.req_str("query", MAX_QUERY_BYTES)?.to_string();
        let manual_id = match a.get("manual_id") {
            Some(v) => Some(paths::manual_id("manual_id", v)?),
            None => None,
        };
        let expand_scope = a.opt_bool("expand_scope")?.unwrap_or(true);
        let only_unscanned = a
            .opt_str("only_unscanned_from_trace_id", MAX_ID_BYTES)?
            .map(str::to_string);
        let include_claim_graph = a.opt_bool("include_claim_graph")?.unwrap_or(false);
        let use_cache = a.opt_bool("use_cache")?;
        let (max_candidates, time_ms) = match a.get("budget") {
            None => (DEFAULT_MAX_CANDIDATES as i64, DEFAULT_TIME_MS as i64),
            Some(b) => {
                let b = Args::new("budget", b, &["max_candidates", "time_ms"])?;
                (
                    b.opt_int("max_candidates", 1)?
                        .unwrap_or(DEFAULT_MAX_CANDIDATES as i64),
                    b.opt_int("time_ms", 1)?.unwrap_or(DEFAULT_TIME_MS as i64),
                )
            }
        };
        let required_terms = parse_required_terms(&a)?;
        Ok(ParsedFind {
            request: FindRequest {
                required_terms,
                query,
                manual_id: None,
                expand_scope,
                only_unscanned,
                include_claim_graph,
                use_cache: false,
                max_candidates: usize::try_from(max_candidates).unwrap_or(usize::MAX),
                time_ms: u64::try_from(time_ms).unwrap_or(u64::MAX),
            },
            manual_id,
            use_cache,
        })
    }
}

/// `required_terms` (an extension of seed 002, as the Python reference
/// accepts it): absent/null, or an array of 1–2 non-blank strings;
/// duplicates (after normalisation) count once.
fn parse_required_terms(a: &Args<'_>) -> Result<Vec<String>, ManualError> {
    let Some(value) = a.get("required_terms") else {
        return Ok(Vec::new());
    };
    let field = a.field("required_terms");
    let Value::Array(items) = value else {
        return Err(ManualError::invalid_parameter(
            &field,
            format!(
                "{field} must be an array of 1 to {MAX_REQUIRED_TERMS} strings, got {}",
                crate::wire::args::type_name(value)
            ),
        ));
    };
    let mut terms: Vec<String> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let term =
            crate::wire::args::string(&format!("{field}[{i}]"), item, MAX_REQUIRED_TERM_BYTES)?;
        let norm = baton_text::normalize::normalize(term);
        if !terms
            .iter()
            .any(|t| baton_text::normalize::normalize(t) == norm)
        {
            terms.push(term.to_string());
        }
    }
    if terms.is_empty() || terms.len() > MAX_REQUIRED_TERMS {
        return Err(ManualError::invalid_parameter(
            &field,
            format!(
                "{field} must hold 1 to {MAX_REQUIRED_TERMS} distinct terms, got {}",
                terms.len()
            ),
        ));
    }
    Ok(terms)
}
