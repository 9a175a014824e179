package stage_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/audit/sqlstore"
	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
	"github.com/preflightmcp/preflight/hints"
)

// decide is a test stage standing for decide, ask and approve: it sets
// the call's decision and confirmation, and refuses a denied call with a
// tool error, as those stages do.
func decide(verdicts map[string]*call.Decision, approver string) call.Stage {
	return &stageFunc{name: "decide", serve: func(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
		d := verdicts[c.Name]
		c.Decision = d
		if d != nil && d.Verdict == call.Deny {
			c.Outcome = "denied"
			return call.ToolError("denied: " + d.Reason), nil
		}
		if d != nil && d.Verdict == call.Confirm {
			c.Confirmation = &call.Confirmation{By: "page", Approver: approver, RequestID: "r1"}
		}
		return next.Serve(ctx, c)
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

// TestAuditNotConnected: a call that signin answers with the link to
// connect is recorded by audit.refused as not_connected, with the identity
// it would have signed in as, and is not forwarded.
func TestAuditNotConnected(t *testing.T) {
	store, err := sqlstore.Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "audit.db"), nil)
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
	route := &stageFunc{name: "route", serve: func(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
		c.Upstream, c.Tool, c.Target = conn, auditTool(c.Name, nil), c.Name
		return next.Serve(ctx, c)
	}}
	notConnected := &stageFunc{name: "signin", serve: func(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
		c.SignedInAs, c.Outcome = "local", "not_connected"
		return call.ToolError("Not run: connect it first"), nil
	}}
	forwarded := false
	final := call.HandlerFunc(func(context.Context, *call.Call) (json.RawMessage, error) { forwarded = true; return nil, nil })
	h := chain(final, route, &stage.AuditRefused{Auditor: a}, notConnected, &stage.Audit{Auditor: a})
	if _, err := h.Serve(t.Context(), &call.Call{Method: call.ToolsCall, Name: "create_issue", Client: &call.Client{}}); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	rs := auditRecords(t, store)
	if forwarded || len(rs) != 1 || rs[0].Outcome != audit.OutcomeNotConnected || rs[0].SignedInAs != "local" {
		t.Fatalf("forwarded %v, records %+v", forwarded, rs)
	}
}

// TestAuditEveryCallOnce runs calls through the audit stages around a
// stage that decides and refuses, into an SQLite store: each call has one
// record, with its effect, decision, reason, approver, outcome and whose
// grant the upstream requests carried (set by signin, inside AuditRefused); a
// destructive call is on disk, outcome unknown, while it is forwarded;
// and a call the store cannot record durably is refused without being
// forwarded.
func TestAuditEveryCallOnce(t *testing.T) {
	ctx := context.Background()
	store, err := sqlstore.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "audit.db"), nil)
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
	verdicts := map[string]*call.Decision{
		"delete": {Verdict: call.Confirm, Reason: "deletes are confirmed"},
		"wipe":   {Verdict: call.Deny, Reason: "rule no-wipe", Rule: "no-wipe"},
	}
	forwarded := map[string]int{}
	var during []*audit.Record
	final := call.HandlerFunc(func(ctx context.Context, c *call.Call) (json.RawMessage, error) {
		forwarded[c.Name]++
		if c.Name == "delete" {
			during = auditRecords(t, store) // what a crash now would leave
		}
		c.Outcome = "ok"
		c.Attempts = 2
		c.Redaction = &call.Redaction{Sensitivity: hints.SensitivityConfidential, Kinds: map[string]int{"email": 1}}
		return json.RawMessage(`{"content":[]}`), nil
	})
	route := &stageFunc{name: "route", serve: func(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
		c.Upstream, c.Tool, c.Target = conn, tools[c.Name], c.Name
		return next.Serve(ctx, c)
	}}
	signIn := &stageFunc{name: "signin", serve: func(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
		c.SignedInAs = "shared"
		return next.Serve(ctx, c)
	}}
	h := chain(final, route, &stage.AuditRefused{Auditor: a}, signIn, decide(verdicts, "alice"), &stage.Audit{Auditor: a})
	serve := func(name string) (json.RawMessage, error) {
		return h.Serve(ctx, &call.Call{Method: call.ToolsCall, Name: name,
			Arguments: json.RawMessage(`{"path":"a.txt","token":"s3cret"}`), Client: &call.Client{Principal: "bob"}})
	}
	for _, name := range []string{"read", "delete", "wipe"} {
		if _, err := serve(name); err != nil {
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
			r.Outcome != w.outcome || r.Retries != w.retries || r.Principal != "bob" || r.Server != "up" || r.ArgsDigest == "" ||
			r.SignedInAs != "shared" {
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
	h = chain(final, route, &stage.AuditRefused{Auditor: a2}, decide(verdicts, "alice"), &stage.Audit{Auditor: a2})
	clear(forwarded)
	_, err = serve("delete")
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != stage.CodeAuditUnavailable || we.Message != stage.ErrAuditUnavailable {
		t.Errorf("delete with the store closed: %v; want the audit-unavailable error", err)
	}
	if _, err := serve("read"); err != nil {
		t.Errorf("read with the store closed: %v", err)
	}
	if forwarded["delete"] != 0 || forwarded["read"] != 1 {
		t.Errorf("forwarded with the store closed: %v", forwarded)
	}
}

func ptr[T any](v T) *T { return &v }
