-- +goose Up
-- One row per audited call. A call begun but never finished has a NULL
-- outcome: it reads as unknown. call_key makes a retried insert
-- idempotent.
CREATE TABLE IF NOT EXISTS audit_records (
	id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	call_key    text        NOT NULL UNIQUE,
	time        timestamptz NOT NULL,
	principal   text        NOT NULL,
	server      text        NOT NULL,
	tool        text        NOT NULL,
	effect      text        NOT NULL,
	destructive boolean     NOT NULL,
	decision    text        NOT NULL,
	reason      text        NOT NULL,
	approver    text        NOT NULL,
	dry_run     boolean     NOT NULL,
	level       text        NOT NULL,
	args_digest text        NOT NULL,
	args        text,                 -- JSON, at the full level only
	outcome     text,                 -- NULL until the call ends
	ended       timestamptz,
	latency_us  bigint,
	retries     integer     NOT NULL DEFAULT 0,
	redactions  text,                 -- JSON object of counts by kind
	error       text        NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS audit_records_time ON audit_records (time, id);
CREATE INDEX IF NOT EXISTS audit_records_principal ON audit_records (principal, time);
CREATE INDEX IF NOT EXISTS audit_records_server_tool ON audit_records (server, tool, time);
