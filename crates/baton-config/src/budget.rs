//! `[budget]` in `baton.toml`: how much one headless run (`baton run`) may
//! spend before it stops for a person. `--max-cost` and `--max-tokens` on
//! the command line win over these.

use serde::Deserialize;

use crate::ConfigError;

/// A run's spending limits; none set means no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Budget {
    /// US dollars, as the agents' clients report them.
    pub max_cost_usd: Option<f64>,
    /// Tokens, all phases.
    pub max_tokens: Option<u64>,
}

// Costs are validated finite, so equality is reflexive.
impl Eq for Budget {}

/// The shape of `[budget]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileBudget {
    max_cost_usd: Option<f64>,
    max_tokens: Option<u64>,
}

/// A cost limit: a finite number of US dollars above 0.
pub fn check_cost(name: &str, value: f64) -> Result<f64, ConfigError> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(ConfigError::InvalidValue {
            name: name.into(),
            value: value.to_string(),
            reason: "expected an amount of US dollars above 0, e.g. 2.50".into(),
        })
    }
}

pub(crate) fn resolve(file: FileBudget) -> Result<Budget, ConfigError> {
    if file.max_tokens == Some(0) {
        return Err(ConfigError::InvalidValue {
            name: "budget.max_tokens".into(),
            value: "0".into(),
            reason: "expected a number of tokens above 0 (leave it out for no limit)".into(),
        });
    }
    Ok(Budget {
        max_cost_usd: file
            .max_cost_usd
            .map(|c| check_cost("budget.max_cost_usd", c))
            .transpose()?,
        max_tokens: file.max_tokens,
    })
}
