-- baton team mode, schema version 1 (docs/team.md). Every object lives in
-- the schema `baton`; the migrator's own table is baton._sqlx_migrations.

-- Working copies (a clone or a worktree each), with readable names.
CREATE TABLE baton.machines (
    id          text PRIMARY KEY,
    host        text NOT NULL,
    path        text NOT NULL,
    name        text NOT NULL,
    repo        text NOT NULL,
    version     text NOT NULL,
    first_seen  timestamptz NOT NULL DEFAULT now(),
    last_seen   timestamptz NOT NULL DEFAULT now()
);

-- Every run of every machine: its row as of its newest write (a write with
-- a smaller revision never replaces a newer one) and its whole state.
CREATE TABLE baton.runs (
    run_key       text PRIMARY KEY,          -- '<machine id>/<folder>'
    machine       text NOT NULL,
    repo          text NOT NULL,
    workspace     text NOT NULL,
    display       text NOT NULL,
    workflow      text NOT NULL,
    spec_name     text NOT NULL,
    issue         text,
    branch        text,
    phase         text NOT NULL,
    status        text NOT NULL,
    active        boolean NOT NULL,
    waiting       jsonb,
    done          integer NOT NULL DEFAULT 0,   -- phases done (for progress)
    total         integer NOT NULL DEFAULT 0,   -- phases of the workflow
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    revision      bigint NOT NULL,
    state         jsonb NOT NULL,
    duplicate_of  text
);
CREATE INDEX runs_by_repo ON baton.runs (repo, updated_at DESC, run_key);
CREATE INDEX runs_by_created ON baton.runs (repo, created_at DESC, workspace DESC);
CREATE INDEX runs_active_issue ON baton.runs (repo, issue) WHERE active;

-- The team's event log. Ids increase in commit order (writers take one
-- transaction lock before inserting), so "id > last seen" misses nothing.
CREATE TABLE baton.events (
    id          bigserial PRIMARY KEY,
    run_key     text NOT NULL,
    revision    bigint NOT NULL,
    ordinal     integer NOT NULL,
    repo        text NOT NULL,
    machine     text NOT NULL,
    record      jsonb NOT NULL,
    written_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (run_key, revision, ordinal)
);
CREATE INDEX events_by_repo ON baton.events (repo, id);
CREATE INDEX events_by_run ON baton.events (run_key, id);

-- Run-history records (one per ended run; a newer one replaces it and
-- takes a new seq, so "seq > last seen" finds it).
CREATE SEQUENCE baton.history_seq;
CREATE TABLE baton.history (
    run_key    text PRIMARY KEY,
    seq        bigint NOT NULL,
    repo       text NOT NULL,
    machine    text NOT NULL,
    workspace  text NOT NULL,
    record     jsonb NOT NULL,
    ended_at   timestamptz NOT NULL
);
CREATE INDEX history_by_repo ON baton.history (repo, seq);

-- One active run per issue across the team: the key is the constraint; a
-- claim is taken over only when its run has ended (or never appeared).
CREATE TABLE baton.issue_claims (
    repo        text NOT NULL,
    issue       text NOT NULL,
    run_key     text NOT NULL,
    machine     text NOT NULL,
    display     text NOT NULL,
    claimed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (repo, issue)
);

-- A person's answers given on one machine for a run of another, applied
-- there under the run's lock by the answer use case.
CREATE TABLE baton.answers (
    id              bigserial PRIMARY KEY,
    run_key         text NOT NULL,
    target_machine  text NOT NULL,
    workspace       text NOT NULL,
    question        text NOT NULL,
    answer          text NOT NULL,
    who             text NOT NULL,
    channel         text NOT NULL,
    from_machine    text NOT NULL,
    from_name       text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    status          text NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'applied', 'refused')),
    result          text,
    done_at         timestamptz
);
CREATE INDEX answers_pending ON baton.answers (target_machine, id) WHERE status = 'pending';
