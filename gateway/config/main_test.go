package config

import (
	"encoding/base64"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testEnv is the environment the tests parse with.
func testEnv(name string) (string, bool) {
	v, ok := map[string]string{
		"HOME":             "/home/alice",
		"API_KEY":          "key-123",
		"API_TOKEN":        "token-456",
		"AIRTABLE_API_KEY": "pat-airtable",
		"DATABASE_URL":     "postgresql://localhost/shop",
		"DOCS_TOKEN":       "docs-789",
		"GITHUB_TOKEN":     "ghp_example",
		"PERPLEXITY_KEY":   "pplx-example",
		"EMPTY":            "",
		"CONNECT":          "lazy",
		"ON":               "true",
		"WORD":             "yes",
		// docs/config.md's examples name these.
		"SENTRY_CLIENT_SECRET":   "sentry-secret",
		"PREFLIGHT_POSTGRES_URL": "postgres://preflight@db.internal:5432/preflight",
		"PREFLIGHT_VAULT_KEYS":   "k1:" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdefghijklmnopqrstuvwxyzABCD")),
		// docs/deploy.md's examples name these too.
		"PREFLIGHT_REDIS_URL":          "redis://redis.internal:6379/0",
		"PREFLIGHT_REQUEST_STATE_KEYS": "k1:" + base64.StdEncoding.EncodeToString([]byte("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd")),
	}[name]
	return v, ok
}

// read returns a file of testdata.
func read(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// mustParse parses a test config that must be valid.
func mustParse(t *testing.T, name, text string) *Config {
	t.Helper()
	c, err := Parse(name, []byte(text), testEnv)
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return c
}
