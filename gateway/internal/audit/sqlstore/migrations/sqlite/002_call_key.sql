-- +goose Up
-- call_key makes a retried insert idempotent, as in PostgreSQL; records
-- written before it have none.
ALTER TABLE audit_records ADD COLUMN call_key TEXT;
CREATE UNIQUE INDEX audit_records_call_key ON audit_records (call_key);
