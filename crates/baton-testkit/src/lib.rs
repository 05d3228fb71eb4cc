//! # baton-testkit
//!
//! What baton's tests share, in one dev-only crate (never a dependency of
//! a shipped crate; the layering test pins that): throwaway repositories,
//! clients that talk to a real `baton serve`, the fake agent's outputs,
//! scripted model servers for the real agent CLIs, a throwaway PostgreSQL,
//! and the synthetic history and corpus generators. A test crate adds it
//! under `[dev-dependencies]`.
//!
//! * [`git`] — a real git repository in a temporary folder, with an
//!   identity and an initial commit, and the git calls tests make on it.
//! * [`history`] — synthetic past runs for the history benchmarks, and the
//!   seeded random source and topic words generators share.
//! * [`http`] — raw HTTP/1.1 against a real server (every header as given)
//!   and a server process started for a test.
//! * [`person`] — the person's own configuration (trusted channels, where
//!   `--auto` is allowed) in a temporary folder.
//! * [`postgres`] — a throwaway PostgreSQL cluster on a free loopback port
//!   (run as an unprivileged user when the tests run as root).

#![warn(missing_docs)]

pub mod clients;
pub mod git;
pub mod history;
pub mod http;
pub mod model;
pub mod person;
pub mod postgres;
