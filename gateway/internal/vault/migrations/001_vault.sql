-- +goose Up
-- One row per principal and upstream server, in both databases. token and
-- client_secret are sealed (base64 of key ID, nonce and AES-256-GCM
-- ciphertext), key_id names the key that sealed them; the rest is readable.
-- Times are microseconds since 1970 (UTC); expiry 0 means none.
CREATE TABLE IF NOT EXISTS preflight_vault (
	principal     TEXT NOT NULL,
	server        TEXT NOT NULL,
	issuer        TEXT NOT NULL DEFAULT '',
	client_id     TEXT NOT NULL DEFAULT '',
	client_secret TEXT NOT NULL DEFAULT '',
	token_url     TEXT NOT NULL DEFAULT '',
	auth_style    INTEGER NOT NULL DEFAULT 0,
	token         TEXT NOT NULL,
	key_id        TEXT NOT NULL,
	scopes        TEXT NOT NULL DEFAULT '',
	expiry        BIGINT NOT NULL DEFAULT 0,
	status        TEXT NOT NULL,
	reason        TEXT NOT NULL DEFAULT '',
	created_at    BIGINT NOT NULL,
	updated_at    BIGINT NOT NULL,
	PRIMARY KEY (principal, server)
);
CREATE INDEX IF NOT EXISTS preflight_vault_key_id ON preflight_vault (key_id);
CREATE INDEX IF NOT EXISTS preflight_vault_server ON preflight_vault (server, created_at);
