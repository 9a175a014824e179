-- +goose Up
-- One row per audited call. A call begun but never finished has a NULL
-- outcome: it reads as unknown.
CREATE TABLE IF NOT EXISTS audit_records (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	time_us     INTEGER NOT NULL, -- start, Unix microseconds
	principal   TEXT    NOT NULL,
	server      TEXT    NOT NULL,
	tool        TEXT    NOT NULL,
	effect      TEXT    NOT NULL,
	destructive INTEGER NOT NULL,
	decision    TEXT    NOT NULL,
	reason      TEXT    NOT NULL,
	approver    TEXT    NOT NULL,
	dry_run     INTEGER NOT NULL,
	level       TEXT    NOT NULL,
	args_digest TEXT    NOT NULL,
	args        TEXT,             -- JSON, at the full level only
	outcome     TEXT,             -- NULL until the call ends
	ended_us    INTEGER,
	latency_us  INTEGER,
	retries     INTEGER NOT NULL DEFAULT 0,
	redactions  TEXT,             -- JSON object of counts by kind
	error       TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS audit_records_time ON audit_records (time_us, id);
CREATE INDEX IF NOT EXISTS audit_records_principal ON audit_records (principal, time_us);
CREATE INDEX IF NOT EXISTS audit_records_server_tool ON audit_records (server, tool, time_us);
