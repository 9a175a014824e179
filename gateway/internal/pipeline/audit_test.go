package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/audit/sqlitestore"
	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/pipeline"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
	"github.com/preflightmcp/preflight/hints"
)

// decide is a test stage standing for decide, ask and approve: it sets
// the call's decision and confirmation, and refuses a denied call with a
// tool error, as those stages do.
func decide(verdicts map[string]*pipeline.Decision, approver string) pipeline.Stage {
	return pipeline.Stage{Name: "decide", Wrap: func(next pipeline.Handler) pipeline.Handler {
		return pipeline.HandlerFunc(func(ctx context.Context, c *pipeline.Call) (mcp.Result, error) {
			d := verdicts[c.Name]
			c.Decision = d
			if d != nil && d.Verdict == pipeline.Deny {
				c.Outcome = "denied"
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "denied: " + d.Reason}}}, nil
			}
			if d != nil && d.Verdict == pipeline.Confirm {
				c.Confirmation = &pipeline.Confirmation{By: "page", Approver: approver, RequestID: "r1"}
			}
			return next.Serve(ctx, c)
		})
	}}
}

func auditTool(name string, ann *mcp.ToolAnnotations) *catalog.Tool {
	return &catalog.Tool{Upstream: "up", Name: name, Tool: &mcp.Tool{Name: name, Annotations: ann}}
}

func auditRecords(t *testing.T, s audit.Store) []*audit.Record {
	t.Helper()
	var out []*audit.Record
	for r, err := range s.Query(context.Background(), audit.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// TestAuditEveryCallOnce runs calls through the audit stages around a
// stage that decides and refuses, into an SQLite store: each call has one
// record, with its effect, decision, reason, approver and outcome; a
// destructive call is on disk, outcome unknown, while it is forwarded;
// and a call the store cannot record durably is refused without being
// forwarded.
func TestAuditEveryCallOnce(t *testing.T) {
	ctx := context.Background()
	store, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "audit.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	a, err := audit.New(store, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := upstream.New(upstream.Spec{Name: "up", URL: "http://127.0.0.1:1/mcp", Lazy: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*catalog.Tool{
		"read":   auditTool("read", &mcp.ToolAnnotations{ReadOnlyHint: true}),
		"delete": auditTool("delete", &mcp.ToolAnnotations{DestructiveHint: ptr(true)}),
		"wipe":   auditTool("wipe", &mcp.ToolAnnotations{DestructiveHint: ptr(true)}),
	}
	verdicts := map[string]*pipeline.Decision{
		"delete": {Verdict: pipeline.Confirm, Reason: "deletes are confirmed"},
		"wipe":   {Verdict: pipeline.Deny, Reason: "rule no-wipe", Rule: "no-wipe"},
	}
	forwarded := map[string]int{}
	var during []*audit.Record
	final := pipeline.HandlerFunc(func(ctx context.Context, c *pipeline.Call) (mcp.Result, error) {
		forwarded[c.Name]++
		if c.Name == "delete" {
			during = auditRecords(t, store) // what a crash now would leave
		}
		c.Outcome = "ok"
		c.Attempts = 2
		c.Redaction = &pipeline.Redaction{Sensitivity: hints.SensitivityConfidential, Kinds: map[string]int{"email": 1}}
		return &mcp.CallToolResult{}, nil
	})
	route := pipeline.Stage{Name: "route", Wrap: func(next pipeline.Handler) pipeline.Handler {
		return pipeline.HandlerFunc(func(ctx context.Context, c *pipeline.Call) (mcp.Result, error) {
			c.Upstream, c.Tool, c.Target = conn, tools[c.Name], c.Name
			return next.Serve(ctx, c)
		})
	}}
	h := pipeline.Chain(final, route, pipeline.AuditRefused(a, nil), decide(verdicts, "alice"), pipeline.Audit(a, nil))
	call := func(name string) (mcp.Result, error) {
		return h.Serve(ctx, &pipeline.Call{Method: upstream.MethodCallTool, Name: name,
			Arguments: json.RawMessage(`{"path":"a.txt","token":"s3cret"}`), Client: &pipeline.Client{Principal: "bob"}})
	}
	for _, name := range []string{"read", "delete", "wipe"} {
		if _, err := call(name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	// The read before it may be written already (batched), or not.
	var pending *audit.Record
	for _, r := range during {
		if r.Tool == "delete" {
			pending = r
		}
	}
	if pending == nil || pending.Outcome != audit.OutcomeUnknown || !pending.Ended.IsZero() {
		t.Fatalf("records while the delete was forwarded: %+v; want the delete, outcome unknown", during)
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[string]*audit.Record{}
	for _, r := range auditRecords(t, store) {
		if got[r.Tool] != nil {
			t.Errorf("%s recorded twice", r.Tool)
		}
		got[r.Tool] = r
	}
	for _, w := range []struct {
		tool     string
		effect   hints.Effect
		decision audit.Decision
		reason   string
		approver string
		outcome  audit.Outcome
		retries  int
	}{
		{"read", hints.EffectRead, audit.Allow, "", "", audit.OutcomeOK, 1},
		{"delete", hints.EffectWrite, audit.Confirm, "deletes are confirmed", "alice", audit.OutcomeOK, 1},
		{"wipe", hints.EffectWrite, audit.Deny, "rule no-wipe", "", audit.OutcomeDenied, 0},
	} {
		r := got[w.tool]
		if r == nil {
			t.Errorf("%s: no record", w.tool)
			continue
		}
		if r.Effect != w.effect || r.Decision != w.decision || r.Reason != w.reason || r.Approver != w.approver ||
			r.Outcome != w.outcome || r.Retries != w.retries || r.Principal != "bob" || r.Server != "up" || r.ArgsDigest == "" {
			t.Errorf("%s: %+v\nwant effect %s decision %s reason %q approver %q outcome %s retries %d", w.tool, r,
				w.effect, w.decision, w.reason, w.approver, w.outcome, w.retries)
		}
		if w.tool != "read" && string(r.Args) != `{"path":"a.txt","token":"[withheld]"}` {
			t.Errorf("%s: args %s", w.tool, r.Args)
		}
	}
	if r := got["read"]; r != nil && (r.Args != nil || r.Redactions["email"] != 1) {
		t.Errorf("read: args %s (summary level records none), redactions %v", r.Args, r.Redactions)
	}
	if forwarded["wipe"] != 0 || forwarded["read"] != 1 || forwarded["delete"] != 1 {
		t.Errorf("forwarded %v", forwarded)
	}

	// The store goes away: the destructive call is refused before it is
	// forwarded; the read proceeds (the default policy).
	a2, err := audit.New(store, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close(ctx)
	store.Close()
	h = pipeline.Chain(final, route, pipeline.AuditRefused(a2, nil), decide(verdicts, "alice"), pipeline.Audit(a2, nil))
	clear(forwarded)
	_, err = call("delete")
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != pipeline.CodeAuditUnavailable || we.Message != pipeline.ErrAuditUnavailable {
		t.Errorf("delete with the store closed: %v; want the audit-unavailable error", err)
	}
	if _, err := call("read"); err != nil {
		t.Errorf("read with the store closed: %v", err)
	}
	if forwarded["delete"] != 0 || forwarded["read"] != 1 {
		t.Errorf("forwarded with the store closed: %v", forwarded)
	}
}

func ptr[T any](v T) *T { return &v }
