-- +goose Up
-- One row per approval request, in both databases. Times are
-- microseconds since 1970 (UTC), 0 for none; lapsed is when the request
-- stopped mattering (its expiry, or when it was used), for the sweep.
CREATE TABLE IF NOT EXISTS preflight_approvals (
	id              TEXT PRIMARY KEY,
	principal       TEXT NOT NULL,
	server          TEXT NOT NULL,
	tool            TEXT NOT NULL,
	args_digest     TEXT NOT NULL,
	effect          TEXT NOT NULL,
	reason          TEXT NOT NULL,
	args            TEXT NOT NULL,
	args_omitted    INTEGER NOT NULL,
	state           TEXT NOT NULL,
	created         BIGINT NOT NULL,
	expires         BIGINT NOT NULL,
	decided_by      TEXT NOT NULL,
	decided_by_name TEXT NOT NULL,
	decided         BIGINT NOT NULL,
	used_at         BIGINT NOT NULL,
	lapsed          BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS preflight_approvals_key ON preflight_approvals (principal, server, tool, args_digest);
CREATE INDEX IF NOT EXISTS preflight_approvals_created ON preflight_approvals (created);
CREATE INDEX IF NOT EXISTS preflight_approvals_lapsed ON preflight_approvals (lapsed);
