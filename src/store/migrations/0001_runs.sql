-- One row per finished run (results::Record). Lists and maps are JSON text, so the same
-- statements run on SQLite and PostgreSQL; the seed is text because it is a u64.
CREATE TABLE runs (
    run_id TEXT NOT NULL,
    run_dir TEXT NOT NULL,
    started_ms BIGINT NOT NULL,
    recorded_ms BIGINT NOT NULL,
    source TEXT NOT NULL,
    scenario TEXT NOT NULL,
    scenario_hash TEXT NOT NULL,
    seed TEXT NOT NULL,
    pulsar_version TEXT NOT NULL,
    image TEXT,
    client TEXT NOT NULL,
    harness_version TEXT NOT NULL,
    status TEXT NOT NULL,
    causes TEXT NOT NULL,
    expected BIGINT NOT NULL,
    received BIGINT NOT NULL,
    missing BIGINT NOT NULL,
    duplicate_values BIGINT NOT NULL,
    duplicate_copies BIGINT NOT NULL,
    unexpected BIGINT NOT NULL,
    ambiguous BIGINT NOT NULL,
    throughput DOUBLE PRECISION,
    recovery_ms TEXT NOT NULL,
    findings TEXT NOT NULL,
    PRIMARY KEY (run_id, run_dir)
);
CREATE INDEX runs_by_group ON runs (scenario, pulsar_version, client, started_ms);
