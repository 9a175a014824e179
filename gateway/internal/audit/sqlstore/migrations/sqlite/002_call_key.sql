-- +goose Up
-- The call key of PostgreSQL's records (a retried insert finds the row it
-- wrote), so that one INSERT serves both databases; SQLite never retries,
-- and its records leave it NULL.
ALTER TABLE audit_records ADD COLUMN call_key TEXT;
CREATE UNIQUE INDEX audit_records_call_key ON audit_records (call_key);
