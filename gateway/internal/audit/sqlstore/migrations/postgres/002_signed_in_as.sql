-- +goose Up
-- Whose grant the call's upstream requests carried, for an upstream the
-- gateway signs in to with OAuth; '' for the others and for older records.
ALTER TABLE audit_records ADD COLUMN IF NOT EXISTS signed_in_as text NOT NULL DEFAULT '';
