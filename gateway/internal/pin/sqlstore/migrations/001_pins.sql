-- +goose Up
-- The pins, in both databases; the fingerprints are kept for people and
-- queries, the definitions' own are computed on reading. Times are
-- microseconds since 1970 (UTC).
CREATE TABLE IF NOT EXISTS preflight_pins (
	server        TEXT NOT NULL,
	tool          TEXT NOT NULL,
	pinned        TEXT NOT NULL,
	pinned_fp     TEXT NOT NULL,
	pinned_at     BIGINT NOT NULL,
	approved_by   TEXT NOT NULL DEFAULT '',
	state         TEXT NOT NULL,
	pending       TEXT,
	pending_fp    TEXT,
	pending_since BIGINT,
	PRIMARY KEY (server, tool)
);
-- When each server was first listed.
CREATE TABLE IF NOT EXISTS preflight_pin_servers (
	server    TEXT NOT NULL PRIMARY KEY,
	listed_at BIGINT NOT NULL
);
