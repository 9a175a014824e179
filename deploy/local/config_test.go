package local

import (
	"os"
	"testing"

	"github.com/preflightmcp/preflight/gateway/config"
)

// TestLocalConfig reads the replicas' default config with the gateway's
// parser, with the variables the run script sets.
func TestLocalConfig(t *testing.T) {
	data, err := os.ReadFile("gateway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"PREFLIGHT_LOCAL_BIN":          "/run/bin",
		"PREFLIGHT_LOCAL_DATA":         "/run/data",
		"PREFLIGHT_REDIS_URL":          "redis://127.0.0.1:6379/0",
		"PREFLIGHT_POSTGRES_URL":       "postgres://postgres@127.0.0.1:5432/preflight?sslmode=disable",
		"PREFLIGHT_REQUEST_STATE_KEYS": "k1:7DXq0Wk9n2yV4xq8mGm3fJ1aRr5tYb6cLp0eNs2uHk8=",
		"PREFLIGHT_LB_PORT":            "7780",
		"PREFLIGHT_VAULT_KEYS":         "v1:Qm9yN3pXc1R0a2VZbkJ2Y1h1OGpGZzJhTDBzZVE2dU4=",
	}
	cfg, err := config.Parse("gateway.yaml", data, func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"files": "/run/bin/files", "folders": "/run/bin/folders"} {
		s := cfg.Servers[name]
		if s == nil || s.Command != want || len(s.Args) != 2 || s.Args[1] != "/run/data/"+name {
			t.Errorf("server %s = %+v, want %s -root /run/data/%s", name, s, want, name)
		}
	}
	if cfg.Redis.URL != env["PREFLIGHT_REDIS_URL"] || cfg.Disclosure.Store != config.StoreRedis {
		t.Errorf("redis %+v, disclosure %+v: want the script's Redis for shared state", cfg.Redis, cfg.Disclosure)
	}
	if len(cfg.RequestState.Keys) != 1 || cfg.Approvals.Store != config.ApprovalsPostgres || cfg.Approvals.URL != env["PREFLIGHT_POSTGRES_URL"] {
		t.Errorf("requestState %v, approvals %+v: want the script's keys and PostgreSQL", cfg.RequestState, cfg.Approvals)
	}
	if want := "http://127.0.0.1:7780/ui"; cfg.Approvals.PageURL != want {
		t.Errorf("approvals.pageUrl %q, want HAProxy's page %s", cfg.Approvals.PageURL, want)
	}
	pg := env["PREFLIGHT_POSTGRES_URL"]
	if cfg.Audit.Store != config.AuditPostgres || cfg.Audit.URL != pg {
		t.Errorf("audit %+v: want the script's PostgreSQL, which preflight audit -store reads", cfg.Audit)
	}
	if cfg.Pins.Store != config.PinStorePostgres || cfg.Pins.URL != pg {
		t.Errorf("pins %+v: want the script's PostgreSQL", cfg.Pins)
	}
	if cfg.Vault.Store != config.PinStorePostgres || cfg.Vault.URL != pg || len(cfg.Vault.Keys) != 1 {
		t.Errorf("vault store %s at %q with %d keys: want the script's PostgreSQL and keys", cfg.Vault.Store, cfg.Vault.URL, len(cfg.Vault.Keys))
	}
}
