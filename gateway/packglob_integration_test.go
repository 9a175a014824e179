//go:build integration

package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/internal/setup"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

// TestConfigPackAndGlobs serves three copies of the npm filesystem
// reference server from a configuration: "off" with pack: false (a dry run
// of edit_file keeps the server's own annotations), "forced" untrusted
// with pack: filesystem (the pack applies although an untrusted server
// gets no pack by its name), and "globs" whose rules name their tools by
// glob: "edit_*" makes the dry run read-only, and "*_file" reads an
// argument that read_file does not take, which is reported when the
// upstream is connected, before any call.
func TestConfigPackAndGlobs(t *testing.T) {
	spec := npmServers(t)
	fs := spec("x", "server-filesystem", t.TempDir())
	server := func(name, extra string) string {
		args, _ := json.Marshal(fs.Args)
		return fmt.Sprintf("  %s:\n    command: %q\n    args: %s\n%s", name, fs.Command, args, extra)
	}
	yaml := "servers:\n" +
		server("off", "    pack: false\n") +
		server("forced", "    trust: untrusted\n    pack: filesystem\n") +
		server("globs", `    pack: false
    rules:
      - name: dry
        tool: "edit_*"
        when: "args.?dryRun.orValue(false) == true"
        annotations: {readOnlyHint: true, destructiveHint: false}
      - name: misfit
        tool: "*_file"
        when: "args.?dryRun.orValue(false) == true"
        annotations: {readOnlyHint: true, destructiveHint: false}
`)
	cfg, err := config.Parse("preflight.yaml", []byte(yaml), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	opts, err := setup.Options(context.Background(), cfg, slog.New(rec))
	if err != nil {
		t.Fatal(err)
	}
	_, url := startGateway(t, opts)

	// Checked when connected: the rule's glob matches read_file, whose
	// schema has no dryRun.
	rec.mu.Lock()
	misfit := slices.ContainsFunc(rec.recs, func(r string) bool {
		return strings.HasPrefix(r, "rules do not fit") && strings.Contains(r, "server=globs") &&
			strings.Contains(r, `"misfit"`) && strings.Contains(r, "read_file")
	})
	rec.mu.Unlock()
	if !misfit {
		t.Errorf("the rule whose glob matches read_file is not reported at connection:\n%s", strings.Join(rec.recs, "\n"))
	}

	p := wiretest.Peer{URL: url, Version: modern, Capabilities: wiretest.WithExtension(preflight.ExtensionToolResolution, preflight.MetaPolicyHints)}
	defer p.Close()
	dry := map[string]any{"path": "a.txt", "edits": []any{map[string]any{"oldText": "a", "newText": "b"}}, "dryRun": true}
	// The untrusted server's resolution is withheld by tools/resolve (its
	// static declaration is not believed); the call path shows it.
	p.Call(t, "tools/call", map[string]any{"name": "forced__edit_file", "arguments": dry})
	if r := lastCall(rec, "forced__edit_file"); !strings.Contains(r, "source=pack readOnly=true destructive=false") {
		t.Errorf("forced pack on an untrusted server: %s", r)
	}
	for tool, readOnly := range map[string]bool{"off__edit_file": false, "globs__edit_file": true} {
		res := p.Call(t, "tools/resolve", map[string]any{"name": tool, "arguments": dry})
		a, _ := res.Result["annotations"].(map[string]any)
		if a == nil || a["readOnlyHint"] != readOnly {
			t.Errorf("%s dry run: %s, want readOnlyHint %v", tool, res.Raw, readOnly)
		}
	}
}
