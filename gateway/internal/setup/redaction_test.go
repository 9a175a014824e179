package setup_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/internal/redact"
	"github.com/preflightmcp/preflight/gateway/internal/setup"
	"github.com/preflightmcp/preflight/hints"
)

// freshProcess names the test that this test binary runs alone, as a
// child of the test process.
const freshProcess = "PREFLIGHT_SETUP_TEST_FRESH"

// TestRedactionLoadsRulesOnFirstScan: a gateway whose redaction is off
// never loads gitleaks' rules, nor does one with redaction on until it
// scans a result for secrets. The rules load once a process, so the test
// runs in a process of its own (this binary, started again for it).
func TestRedactionLoadsRulesOnFirstScan(t *testing.T) {
	t.Parallel()
	if os.Getenv(freshProcess) != t.Name() {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run", "^"+t.Name()+"$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), freshProcess+"="+t.Name())
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
			t.Fatalf("in a process of its own: %v\n%s", err, out)
		}
		return
	}
	options := func(redaction string) *gateway.Options {
		t.Helper()
		dir := t.TempDir()
		yaml := fmt.Sprintf("servers:\n  up:\n    url: http://127.0.0.1:1/mcp\naudit:\n  path: %s\npins:\n  path: %s\n%s",
			filepath.Join(dir, "audit.db"), filepath.Join(dir, "pins.db"), redaction)
		cfg, err := config.Parse(filepath.Join(dir, "gateway.yaml"), []byte(yaml), func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		opts, err := setup.Options(context.Background(), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { opts.Close() })
		return opts
	}
	if redact.RulesLoaded() {
		t.Fatal("the rules were loaded before any gateway was set up")
	}
	if off := options("redaction: {level: off, withhold: off}\n"); off.Redactor != nil {
		t.Error("redaction off: the gateway has a redactor")
	}
	on := options("")
	if on.Redactor == nil {
		t.Fatal("redaction on by default: the gateway has no redactor")
	}
	if redact.RulesLoaded() {
		t.Fatal("the rules were loaded when the gateways were set up")
	}
	key := "AKIAQYLPMN5HHHFPZAM2"
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "aws_access_key_id = " + key}}}
	if out, _ := on.Redactor.Result(res, hints.SensitivityPublic); out != res || redact.RulesLoaded() {
		t.Fatal("a public result was scanned")
	}
	out, _ := on.Redactor.Result(res, hints.SensitivityConfidential)
	if strings.Contains(out.Content[0].(*mcp.TextContent).Text, key) {
		t.Error("the key was not redacted")
	}
	if !redact.RulesLoaded() {
		t.Error("the rules were not loaded by the first scan")
	}
}
