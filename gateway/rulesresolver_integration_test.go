//go:build integration

package gateway_test

import (
	"testing"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/internal/rules"
	"github.com/preflightmcp/preflight/gateway/internal/setup"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

// TestRulesPackOnFilesystem puts the gateway, with the rules resolver, in
// front of the npm filesystem reference server (trusted by default, so its
// serverInfo name selects the shipped filesystem pack) and asks
// tools/resolve in both eras: a dry run of edit_file resolves read-only by
// the pack's rule, a real edit keeps the server's own annotations, and a
// deployer override of write_file wins over the server's declaration.
func TestRulesPackOnFilesystem(t *testing.T) {
	spec := npmServers(t)
	fs := spec("filesystem", "server-filesystem", t.TempDir())
	yes := true
	r, err := setup.NewRulesResolver(rules.Config{Servers: map[string]rules.Server{
		"filesystem": {Overrides: map[string]rules.Override{
			"write_file": {Hints: rules.HintPatch{RequiresConfirmation: &yes}},
		}},
	}}, &setup.RulesOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{fs}, Resolver: r})
	for _, version := range []string{modern, legacy} {
		p := wiretest.Peer{URL: url, Version: version, Capabilities: wiretest.WithExtension(preflight.ExtensionToolResolution, preflight.MetaPolicyHints)}
		ann := func(args map[string]any) (map[string]any, map[string]any) {
			res := p.Call(t, "tools/resolve", map[string]any{"name": "edit_file", "arguments": args})
			a, _ := res.Result["annotations"].(map[string]any)
			m, _ := res.Result["_meta"].(map[string]any)
			if a == nil {
				t.Fatalf("%s: %s", version, res.Raw)
			}
			return a, m
		}
		edit := map[string]any{"path": "a.txt", "edits": []any{map[string]any{"oldText": "a", "newText": "b"}}}
		a, _ := ann(edit)
		if a["readOnlyHint"] != false {
			t.Errorf("%s edit: %v", version, a)
		}
		edit["dryRun"] = true
		a, m := ann(edit)
		if a["readOnlyHint"] != true || a["destructiveHint"] != false {
			t.Errorf("%s dry run: annotations %v", version, a)
		}
		if h, _ := m[preflight.MetaPolicyHints].(map[string]any); h["effect"] != "read" {
			t.Errorf("%s dry run: _meta %v", version, m)
		}
		res := p.Call(t, "tools/resolve", map[string]any{"name": "write_file", "arguments": map[string]any{"path": "a.txt", "content": "x"}})
		m, _ = res.Result["_meta"].(map[string]any)
		if h, _ := m[preflight.MetaPolicyHints].(map[string]any); h["requiresConfirmation"] != true {
			t.Errorf("%s write_file override: %s", version, res.Raw)
		}
		p.Close()
	}
}
