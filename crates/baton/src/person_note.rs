//! Says on stderr, once per command, when the person's own configuration
//! (`~/.config/baton/config.toml`, docs/configuration.md) cannot be used:
//! a file that is no plain file, too large, unreadable or not valid TOML
//! grants nothing, and without this line the person would never learn
//! why their `trust` or `auto` settings do not hold. The command goes on
//! with the defaults.
//!
//! Every command a person runs says it; `baton hook` does not (its output
//! is the agent client's, and the hook reads no person setting).

use baton_config::PersonSettings;

/// What the defaults mean, said after the problem.
const DEFAULTS: &str = "baton goes on without it: only your own answers (terminal, dashboard, prompt, chat) count as yours, and no run may approve your checkpoints with --auto";

/// Prints the problem of the person's configuration, if it has one.
pub fn warn_if_unusable() {
    if let Some(line) = warning(&PersonSettings::load()) {
        eprintln!("{line}");
    }
}

/// The warning for `settings`, when their file could not be used.
fn warning(settings: &PersonSettings) -> Option<String> {
    let problem = settings.problem.as_deref()?;
    Some(format!(
        "baton: warning: your own configuration is not used: {problem}\n  {DEFAULTS}."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_usable_configuration_says_nothing_and_a_broken_one_says_why() {
        assert_eq!(warning(&PersonSettings::default()), None);
        let broken = PersonSettings::parse("[auto\n", std::path::Path::new("/h/config.toml"));
        let line = warning(&broken).expect("a warning");
        assert!(line.contains("/h/config.toml is not valid"), "{line}");
        assert!(line.contains("baton goes on without it"), "{line}");
    }
}
