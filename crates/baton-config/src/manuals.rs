//! Configuration of the manual tools (seed 002, `baton-manuals`), read
//! from environment variables. The manual library reads no environment
//! itself: its callers resolve this and hand it over.
//!
//! Every variable is optional. Values that do not parse fall back to the
//! default and are recorded in [`ManualConfig::warnings`], so a caller can
//! surface them; reading the configuration never fails.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Default number of manual sections a `spawn_agent` prompt lists.
pub const DEFAULT_PROMPT_REFERENCES: usize = 5;

/// Default largest manual file indexed or served (`MANUALS_MAX_FILE_BYTES`): 8 MiB.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// Names of the environment variables read by [`ManualConfig::from_env`].
pub mod env {
    /// Folder holding one directory per manual (default `<base_dir>/manuals`; relative values are resolved against `base_dir`).
    pub const MANUALS_ROOT: &str = "MANUALS_ROOT";
    /// Manual id used by `manual_find` when the call gives no `manual_id`.
    pub const DEFAULT_MANUAL_ID: &str = "DEFAULT_MANUAL_ID";
    /// `true` lets `manual_read` return a whole `.md` file (`scope=file` with `allow_file=true`). Default false.
    pub const ALLOW_FILE_SCOPE: &str = "ALLOW_FILE_SCOPE";
    /// Default of `manual_find.use_cache`. Default true.
    pub const SEM_CACHE_ENABLED: &str = "SEM_CACHE_ENABLED";
    /// A cached result whose `summary.gap_count` exceeds this is searched again. Negative disables the guard. Default -1.
    pub const SEM_CACHE_MAX_SUMMARY_GAP: &str = "SEM_CACHE_MAX_SUMMARY_GAP";
    /// A cached result whose `summary.conflict_count` exceeds this is searched again. Negative disables the guard. Default -1.
    pub const SEM_CACHE_MAX_SUMMARY_CONFLICT: &str = "SEM_CACHE_MAX_SUMMARY_CONFLICT";
    /// Maximum number of cached `manual_find` results. Default 500.
    pub const SEM_CACHE_MAX_KEEP: &str = "SEM_CACHE_MAX_KEEP";
    /// Lifetime of a cached result in seconds. Default 1800.
    pub const SEM_CACHE_TTL_SEC: &str = "SEM_CACHE_TTL_SEC";
    /// Maximum number of traces kept for `manual_hits`. Default 100.
    pub const TRACE_MAX_KEEP: &str = "TRACE_MAX_KEEP";
    /// Lifetime of a trace in seconds, from its creation. Default 1800.
    pub const TRACE_TTL_SEC: &str = "TRACE_TTL_SEC";
    /// Weight of the query-coverage correction in the ranking score. Default 0.35.
    pub const SPARSE_QUERY_COVERAGE_WEIGHT: &str = "SPARSE_QUERY_COVERAGE_WEIGHT";
    /// `true` applies the late-interaction rerank to the top candidates. Default true.
    pub const LATE_RERANK_ENABLED: &str = "LATE_RERANK_ENABLED";
    /// Number of top candidates the late rerank rescores. Default 50.
    pub const LATE_RERANK_TOP_N: &str = "LATE_RERANK_TOP_N";
    /// Weight of the late-rerank score relative to the first-stage score. Default 0.6.
    pub const LATE_RERANK_WEIGHT: &str = "LATE_RERANK_WEIGHT";
    /// `true` promotes a weak stage-3 result to stage 4 (loose matching, wider scope). Default false.
    pub const CORRECTIVE_ENABLED: &str = "CORRECTIVE_ENABLED";
    /// Corrective trigger: minimum share of supported claims. Default 0.9.
    pub const CORRECTIVE_COVERAGE_MIN: &str = "CORRECTIVE_COVERAGE_MIN";
    /// Corrective trigger: minimum relative top-score margin. Default 0.15.
    pub const CORRECTIVE_MARGIN_MIN: &str = "CORRECTIVE_MARGIN_MIN";
    /// Corrective trigger: minimum number of candidates. Default 3.
    pub const CORRECTIVE_MIN_CANDIDATES: &str = "CORRECTIVE_MIN_CANDIDATES";
    /// Folder of the on-disk index cache (default `<base_dir>/.baton/manual-index`; `off` disables it).
    pub const MANUALS_INDEX_DIR: &str = "MANUALS_INDEX_DIR";
    /// `true` watches the manuals root with `notify` to detect edits. Default true.
    pub const MANUALS_WATCH: &str = "MANUALS_WATCH";
    /// Maximum age in milliseconds of the last full `stat` check of every manual file
    /// (default 30000 while watching, 0 = every call, when not watching).
    pub const MANUALS_STAT_INTERVAL_MS: &str = "MANUALS_STAT_INTERVAL_MS";
    /// A thesaurus file of your manuals' vocabulary, `KEY = ALT1, ALT2` per line
    /// (default `<MANUALS_ROOT>/thesaurus.txt` when it exists; `off` disables it).
    pub const MANUALS_THESAURUS: &str = "MANUALS_THESAURUS";
    /// `false` turns the built-in thesaurus off (only your file expands queries). Default true.
    pub const MANUALS_THESAURUS_BUILTIN: &str = "MANUALS_THESAURUS_BUILTIN";
    /// Largest manual file indexed or served, in bytes (larger files are
    /// skipped with a warning). Default 8388608 (8 MiB).
    pub const MANUALS_MAX_FILE_BYTES: &str = "MANUALS_MAX_FILE_BYTES";
    /// Threads that build the index (default: the machine's cores, at most 4).
    pub const MANUALS_INDEX_THREADS: &str = "MANUALS_INDEX_THREADS";
    /// How many manual sections a `spawn_agent` prompt lists as references
    /// (default 5; `0` or `off` lists none).
    pub const MANUALS_PROMPT_REFERENCES: &str = "MANUALS_PROMPT_REFERENCES";
}

/// Ranking knobs of `manual_find`.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoringConfig {
    /// Weight of the query-coverage correction (`SPARSE_QUERY_COVERAGE_WEIGHT`).
    pub query_coverage_weight: f64,
    /// Whether the late-interaction rerank runs (`LATE_RERANK_ENABLED`).
    pub late_rerank_enabled: bool,
    /// How many top candidates the late rerank rescores (`LATE_RERANK_TOP_N`).
    pub late_rerank_top_n: usize,
    /// Weight of the late-rerank score (`LATE_RERANK_WEIGHT`).
    pub late_rerank_weight: f64,
}

impl Default for ScoringConfig {
    fn default() -> Self {
        ScoringConfig {
            query_coverage_weight: 0.35,
            late_rerank_enabled: true,
            late_rerank_top_n: 50,
            late_rerank_weight: 0.6,
        }
    }
}

/// Thresholds of the corrective (stage 3 → stage 4) promotion.
#[derive(Debug, Clone, PartialEq)]
pub struct CorrectiveConfig {
    /// Whether weak results are promoted to stage 4 (`CORRECTIVE_ENABLED`).
    pub enabled: bool,
    /// Minimum share of supported claims (`CORRECTIVE_COVERAGE_MIN`).
    pub coverage_min: f64,
    /// Minimum relative margin of the top score over ranks 2–5 (`CORRECTIVE_MARGIN_MIN`).
    pub margin_min: f64,
    /// Minimum number of candidates (`CORRECTIVE_MIN_CANDIDATES`).
    pub min_candidates: usize,
}

impl Default for CorrectiveConfig {
    fn default() -> Self {
        CorrectiveConfig {
            enabled: false,
            coverage_min: 0.9,
            margin_min: 0.15,
            min_candidates: 3,
        }
    }
}

/// Everything the manual service needs to know; build it with
/// [`ManualConfig::from_env`] or [`ManualConfig::new`] and adjust fields.
#[derive(Debug, Clone, PartialEq)]
pub struct ManualConfig {
    /// The manuals root (`MANUALS_ROOT`): one sub-directory per manual.
    pub root: PathBuf,
    /// Manual used by `manual_find` when the call names none (`DEFAULT_MANUAL_ID`).
    pub default_manual_id: Option<String>,
    /// Whether `.md` files may be read whole (`ALLOW_FILE_SCOPE`).
    pub allow_file_scope: bool,
    /// Default of `manual_find.use_cache` (`SEM_CACHE_ENABLED`).
    pub sem_cache_enabled: bool,
    /// Cache guard on `summary.gap_count`; `None` disables it (`SEM_CACHE_MAX_SUMMARY_GAP`).
    pub sem_cache_max_summary_gap: Option<u64>,
    /// Cache guard on `summary.conflict_count`; `None` disables it (`SEM_CACHE_MAX_SUMMARY_CONFLICT`).
    pub sem_cache_max_summary_conflict: Option<u64>,
    /// Maximum number of cached results (`SEM_CACHE_MAX_KEEP`, at least 1).
    pub sem_cache_max_keep: usize,
    /// Lifetime of a cached result (`SEM_CACHE_TTL_SEC`).
    pub sem_cache_ttl: Duration,
    /// Maximum number of traces (`TRACE_MAX_KEEP`, at least 1).
    pub trace_max_keep: usize,
    /// Lifetime of a trace from its creation (`TRACE_TTL_SEC`).
    pub trace_ttl: Duration,
    /// Folder of the persisted index; `None` keeps the index in memory only.
    pub index_dir: Option<PathBuf>,
    /// Whether a `notify` watcher marks manuals dirty on file events (`MANUALS_WATCH`).
    pub watch: bool,
    /// Maximum age of the last full `stat` check (`MANUALS_STAT_INTERVAL_MS`).
    pub stat_interval: Duration,
    /// Ranking knobs.
    pub scoring: ScoringConfig,
    /// Corrective promotion thresholds.
    pub corrective: CorrectiveConfig,
    /// The user's thesaurus file (`MANUALS_THESAURUS`), if any.
    pub thesaurus_file: Option<PathBuf>,
    /// Whether a missing [`ManualConfig::thesaurus_file`] is a problem to
    /// report (it was named explicitly) or silently ignored (the default path).
    pub thesaurus_required: bool,
    /// Whether the built-in thesaurus is used (`MANUALS_THESAURUS_BUILTIN`).
    pub builtin_thesaurus: bool,
    /// Largest file indexed or served (`MANUALS_MAX_FILE_BYTES`).
    pub max_file_bytes: u64,
    /// Threads building the index (`MANUALS_INDEX_THREADS`, at least 1).
    pub index_threads: usize,
    /// Manual sections listed in a `spawn_agent` prompt
    /// (`MANUALS_PROMPT_REFERENCES`; 0 = none).
    pub prompt_references: usize,
    /// Values that could not be parsed and were replaced by their default.
    pub warnings: Vec<String>,
}

impl ManualConfig {
    /// Defaults for a given manuals root: no disk index, no watcher, and a
    /// full `stat` check on every call (deterministic; what tests want).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        ManualConfig {
            root: root.into(),
            default_manual_id: None,
            allow_file_scope: false,
            sem_cache_enabled: true,
            sem_cache_max_summary_gap: None,
            sem_cache_max_summary_conflict: None,
            sem_cache_max_keep: 500,
            sem_cache_ttl: Duration::from_secs(1800),
            trace_max_keep: 100,
            trace_ttl: Duration::from_secs(1800),
            index_dir: None,
            watch: false,
            stat_interval: Duration::ZERO,
            scoring: ScoringConfig::default(),
            corrective: CorrectiveConfig::default(),
            thesaurus_file: None,
            thesaurus_required: false,
            builtin_thesaurus: true,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            index_threads: default_index_threads(),
            prompt_references: DEFAULT_PROMPT_REFERENCES,
            warnings: Vec::new(),
        }
    }

    /// Reads the variables listed in [`env`] from the process environment.
    /// A relative `MANUALS_ROOT` (and `MANUALS_INDEX_DIR`) is resolved against
    /// `base_dir`; the default root is `<base_dir>/manuals`.
    pub fn from_env(base_dir: &Path) -> Self {
        Self::from_lookup(base_dir, |name| std::env::var(name).ok())
    }

    /// Like [`ManualConfig::from_env`], with the variables supplied by `lookup`
    /// (tests use this instead of mutating the process environment).
    pub fn from_lookup(base_dir: &Path, lookup: impl Fn(&str) -> Option<String>) -> Self {
        let mut reader = EnvReader {
            lookup: &lookup,
            warnings: Vec::new(),
        };
        let root = match reader.text(env::MANUALS_ROOT) {
            Some(value) => resolve(base_dir, &value),
            None => base_dir.join("manuals"),
        };
        let mut config = ManualConfig::new(root);
        config.default_manual_id = reader.text(env::DEFAULT_MANUAL_ID);
        config.allow_file_scope = reader.boolean(env::ALLOW_FILE_SCOPE, false);
        config.sem_cache_enabled = reader.boolean(env::SEM_CACHE_ENABLED, true);
        config.sem_cache_max_summary_gap = reader.guard(env::SEM_CACHE_MAX_SUMMARY_GAP);
        config.sem_cache_max_summary_conflict = reader.guard(env::SEM_CACHE_MAX_SUMMARY_CONFLICT);
        config.sem_cache_max_keep = reader.count(env::SEM_CACHE_MAX_KEEP, 500);
        config.sem_cache_ttl =
            Duration::from_secs(reader.count(env::SEM_CACHE_TTL_SEC, 1800) as u64);
        config.trace_max_keep = reader.count(env::TRACE_MAX_KEEP, 100);
        config.trace_ttl = Duration::from_secs(reader.count(env::TRACE_TTL_SEC, 1800) as u64);
        config.index_dir = match reader.text(env::MANUALS_INDEX_DIR) {
            Some(value) if value.eq_ignore_ascii_case("off") => None,
            Some(value) => Some(resolve(base_dir, &value)),
            None => Some(base_dir.join(".baton").join("manual-index")),
        };
        config.watch = reader.boolean(env::MANUALS_WATCH, true);
        let default_interval = if config.watch { 30_000 } else { 0 };
        config.stat_interval = Duration::from_millis(reader.number(
            env::MANUALS_STAT_INTERVAL_MS,
            default_interval as f64,
            0.0,
        ) as u64);
        let defaults = ScoringConfig::default();
        config.scoring = ScoringConfig {
            query_coverage_weight: reader.number(
                env::SPARSE_QUERY_COVERAGE_WEIGHT,
                defaults.query_coverage_weight,
                0.0,
            ),
            late_rerank_enabled: reader
                .boolean(env::LATE_RERANK_ENABLED, defaults.late_rerank_enabled),
            late_rerank_top_n: reader.count(env::LATE_RERANK_TOP_N, defaults.late_rerank_top_n),
            late_rerank_weight: reader.number(
                env::LATE_RERANK_WEIGHT,
                defaults.late_rerank_weight,
                0.0,
            ),
        };
        let corrective = CorrectiveConfig::default();
        config.corrective = CorrectiveConfig {
            enabled: reader.boolean(env::CORRECTIVE_ENABLED, corrective.enabled),
            coverage_min: reader.number(env::CORRECTIVE_COVERAGE_MIN, corrective.coverage_min, 0.0),
            margin_min: reader.number(env::CORRECTIVE_MARGIN_MIN, corrective.margin_min, 0.0),
            min_candidates: reader.count(env::CORRECTIVE_MIN_CANDIDATES, corrective.min_candidates),
        };
        match reader.text(env::MANUALS_THESAURUS) {
            Some(value) if value.eq_ignore_ascii_case("off") => {}
            Some(value) => {
                config.thesaurus_file = Some(resolve(base_dir, &value));
                config.thesaurus_required = true;
            }
            None => config.thesaurus_file = Some(config.root.join("thesaurus.txt")),
        }
        config.builtin_thesaurus = reader.boolean(env::MANUALS_THESAURUS_BUILTIN, true);
        config.max_file_bytes =
            reader.count(env::MANUALS_MAX_FILE_BYTES, DEFAULT_MAX_FILE_BYTES as usize) as u64;
        config.index_threads = reader.count(env::MANUALS_INDEX_THREADS, default_index_threads());
        config.prompt_references = match reader.text(env::MANUALS_PROMPT_REFERENCES) {
            Some(v) if v.eq_ignore_ascii_case("off") || v == "0" => 0,
            Some(_) => reader.count(env::MANUALS_PROMPT_REFERENCES, DEFAULT_PROMPT_REFERENCES),
            None => DEFAULT_PROMPT_REFERENCES,
        };
        config.warnings = reader.warnings;
        config
    }
}

/// The machine's cores, at most 4 (building is bounded by reading and
/// tokenising; more threads only add memory).
fn default_index_threads() -> usize {
    // Asked once per process: the standard library reads the cgroup's CPU
    // quota files on every call, and the configuration is read per call.
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, 4)
    })
}

fn resolve(base_dir: &Path, value: &str) -> PathBuf {
    let path = PathBuf::from(value);
    if path.is_absolute() {
        path
    } else {
        base_dir.join(path)
    }
}

struct EnvReader<'a> {
    lookup: &'a dyn Fn(&str) -> Option<String>,
    warnings: Vec<String>,
}

impl EnvReader<'_> {
    /// A trimmed, non-empty value.
    fn text(&mut self, name: &str) -> Option<String> {
        (self.lookup)(name)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    }

    fn boolean(&mut self, name: &str, default: bool) -> bool {
        match self.text(name) {
            None => default,
            Some(v) => match v.to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" | "on" => true,
                "0" | "false" | "no" | "off" => false,
                _ => {
                    self.warnings
                        .push(format!("{name}={v:?} is not a boolean; using {default}"));
                    default
                }
            },
        }
    }

    fn number(&mut self, name: &str, default: f64, min: f64) -> f64 {
        match self.text(name) {
            None => default,
            Some(v) => match v.parse::<f64>() {
                Ok(n) if n.is_finite() && n >= min => n,
                _ => {
                    self.warnings.push(format!(
                        "{name}={v:?} is not a number >= {min}; using {default}"
                    ));
                    default
                }
            },
        }
    }

    /// A positive integer (at least 1).
    fn count(&mut self, name: &str, default: usize) -> usize {
        match self.text(name) {
            None => default,
            Some(v) => match v.parse::<usize>() {
                Ok(n) if n >= 1 => n,
                _ => {
                    self.warnings.push(format!(
                        "{name}={v:?} is not an integer >= 1; using {default}"
                    ));
                    default
                }
            },
        }
    }

    /// A guard threshold: a negative integer (or absence) disables it.
    fn guard(&mut self, name: &str) -> Option<u64> {
        let v = self.text(name)?;
        match v.parse::<i64>() {
            Ok(n) if n < 0 => None,
            Ok(n) => Some(n as u64),
            Err(_) => {
                self.warnings
                    .push(format!("{name}={v:?} is not an integer; guard disabled"));
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_references_default_to_five_and_turn_off() {
        let base = Path::new("/repo");
        let read = |v: Option<&str>| {
            let v = v.map(str::to_string);
            ManualConfig::from_lookup(base, move |name| {
                (name == env::MANUALS_PROMPT_REFERENCES)
                    .then(|| v.clone())
                    .flatten()
            })
        };
        assert_eq!(read(None).prompt_references, 5);
        assert_eq!(read(Some("off")).prompt_references, 0);
        assert_eq!(read(Some("0")).prompt_references, 0);
        assert_eq!(read(Some("3")).prompt_references, 3);
        let bad = read(Some("lots"));
        assert_eq!(bad.prompt_references, 5);
        assert_eq!(bad.warnings.len(), 1);
        assert_eq!(read(None).root, base.join("manuals"));
    }
}
