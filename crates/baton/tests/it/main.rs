//! The `baton` binary's integration tests, in one test binary (as ripgrep
//! does): each module drives the built binary the way a user or a client
//! does — over stdio, HTTP, the CLI — and `common` holds what they share.
//! A new test file is a module here (`mod name;`).

mod common;

mod chaos;
mod cli;
mod cli_history;
mod cli_people;
mod client_claude;
mod client_codex;
mod client_integrity;
mod e2e_bad_input;
mod e2e_concurrency;
mod e2e_dashboard;
mod e2e_faults;
mod e2e_gates;
mod e2e_git;
mod e2e_history;
mod e2e_http;
mod e2e_issue;
mod e2e_lifecycle;
mod e2e_malformed_frames;
mod e2e_manual;
mod e2e_pipeline_bad_input;
mod e2e_pipeline_init;
mod e2e_pipeline_loop;
mod e2e_tools_list;
mod e2e_transcript;
mod e2e_typescript;
mod e2e_user_review;
mod error_codes;
mod hook_cmd;
mod layering;
mod manual_refs;
mod person_channels;
mod person_dashboard;
mod person_past_runs;
mod person_state;
mod run_agents;
mod run_clients;
mod run_demo;
mod structure;
mod team;
mod test_command;
