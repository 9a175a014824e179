package rules

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/policy"
	"github.com/preflightmcp/preflight/resolve"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func ptr[T any](v T) *T { return &v }

// filesTool is a multi-action tool as an upstream lists it: the worst case
// statically (destructive, not idempotent, closed world).
func filesTool() *mcp.Tool {
	return &mcp.Tool{
		Name: "manage_files",
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"action": map[string]any{"type": "string", "enum": []any{"read", "append", "delete"}},
				"path":   map[string]any{"type": "string"},
				"force":  map[string]any{"type": "boolean"},
				"count":  map[string]any{"type": "integer"},
			},
			"required": []any{"action", "path"},
		},
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)},
	}
}

var (
	readOnly = AnnotationPatch{ReadOnlyHint: ptr(true), DestructiveHint: ptr(false), IdempotentHint: ptr(true)}
	additive = AnnotationPatch{DestructiveHint: ptr(false)}
)

func compile(t *testing.T, s Server) *Rules {
	t.Helper()
	r, err := Compile(Config{Servers: map[string]Server{"up": s}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func call(tool *mcp.Tool, args string) Call {
	return Call{Server: "up", Tool: tool, Arguments: json.RawMessage(args)}
}

func mustResolve(t *testing.T, r *Rules, c Call, up UpstreamResolver) Result {
	t.Helper()
	res, err := r.Resolve(t.Context(), c, up)
	if err != nil {
		t.Fatalf("Resolve(%s): %v", c.Arguments, err)
	}
	return res
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		s    Server
		want []string // every fragment must appear
	}{
		{"cel syntax", Server{Rules: []Rule{{Name: "r1", Tools: []string{"t"}, When: `args.action == `, Hints: HintPatch{Effect: "read"}}}},
			[]string{`server "up": rule "r1": expression does not compile`, "Syntax error"}},
		{"undeclared variable", Server{Rules: []Rule{{Name: "r1", When: `user == "x"`, Hints: HintPatch{Effect: "read"}}}},
			[]string{`rule "r1"`, "undeclared reference to 'user'"}},
		{"not bool", Server{Rules: []Rule{{Name: "r1", Tools: []string{"t"}, When: `args.force`, Hints: HintPatch{Effect: "read"}}}},
			[]string{`rule "r1"`, "not bool", "args.x == true"}},
		{"args without tools", Server{Rules: []Rule{{Name: "r1", When: `args.action == "read"`, Hints: HintPatch{Effect: "read"}}}},
			[]string{`rule "r1"`, "names no tools"}},
		{"shadowing args", Server{Rules: []Rule{{Name: "r1", Tools: []string{"t"}, When: `[1].exists(args, args == 1)`, Hints: HintPatch{Effect: "read"}}}},
			[]string{`rule "r1"`, "hides the call's arguments"}},
		{"no name", Server{Rules: []Rule{{Hints: HintPatch{Effect: "read"}}}}, []string{`rule "#1": has no name`}},
		{"duplicate name", Server{Rules: []Rule{{Name: "a", Hints: HintPatch{Effect: "read"}}}, Pack: []Rule{{Name: "a", Hints: HintPatch{Effect: "read"}}}},
			[]string{`rule "a": another rule of this server has the same name`}},
		{"does nothing", Server{Rules: []Rule{{Name: "a", When: "true"}}}, []string{`rule "a": sets no annotation and no hint`}},
		{"bad hint value", Server{Rules: []Rule{{Name: "a", Hints: HintPatch{Effect: "erase"}}}},
			[]string{`rule "a": mcp.dev/effect: invalid value "erase" (allowed: read, write, external, delete)`}},
		{"bad trust", Server{Trust: "mostly"}, []string{`server "up": trust: invalid value "mostly"`}},
		{"override contradiction", Server{Overrides: map[string]Override{"t": {Annotations: AnnotationPatch{ReadOnlyHint: ptr(true), DestructiveHint: ptr(true)}}}},
			[]string{`server "up": override: tool "t": sets readOnlyHint true but describes a mutating tool`}},
		{"empty override", Server{Overrides: map[string]Override{"t": {}}}, []string{`override: tool "t": sets no annotation and no hint`}},
		{"too long", Server{Rules: []Rule{{Name: "a", When: strings.Repeat("true && ", MaxExpressionBytes/8+1) + "true", Hints: HintPatch{Effect: "read"}}}},
			[]string{`rule "a": expression is`, "bytes long"}},
		{"empty tool name", Server{Rules: []Rule{{Name: "a", Tools: []string{""}, Hints: HintPatch{Effect: "read"}}}}, []string{`rule "a": tools: empty tool name`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := Compile(Config{Servers: map[string]Server{"up": c.s}})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

func TestSchemaChecks(t *testing.T) {
	t.Parallel()
	cases := []struct {
		when string
		want string
	}{
		{`args.acton == "read"`, `server "up": rule "r": tool "manage_files": argument "acton": the tool's input schema has no such argument (arguments: action, count, force, path)`},
		{`has(args.forse)`, `argument "forse": the tool's input schema has no such argument`},
		{`args["pth"].startsWith("/")`, `argument "pth": the tool's input schema has no such argument`},
		{`args.?actn.orValue("") == "read"`, `argument "actn"`},
		{`"dryRun" in args`, `argument "dryRun"`},
		{`args.action == "erase"`, `argument "action": compared (==) with "erase", which is not one of its values (enum: "read", "append", "delete")`},
		{`"erase" != args.action`, `argument "action": compared (!=) with "erase"`},
		{`args.action in ["read", "remove"]`, `compared (in) with "remove", which is not one of its values`},
		{`args.force == "yes"`, `argument "force": compared (==) with "yes", a string, but the argument's type is boolean`},
		{`args.count == 1.5`, `argument "count": compared (==) with 1.5, a number, but the argument's type is integer`},
		{`args.?force.orValue("no") == true`, `argument "force": defaults to "no", a string, but the argument's type is boolean`},
		{`args.path == 3`, `argument "path": compared (==) with 3, a number, but the argument's type is string`},
	}
	for _, c := range cases {
		t.Run(c.when, func(t *testing.T) {
			t.Parallel()
			r := compile(t, Server{Rules: []Rule{{Name: "r", Tools: []string{"manage_files"}, When: c.when, Annotations: readOnly}}})
			tool := filesTool()
			err := r.SetTools("up", []*mcp.Tool{tool})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("SetTools error:\n %v\nwant it to contain\n %s", err, c.want)
			}
			var re *Error
			if !errors.As(err, &re) || re.Rule != "r" || re.Tool != "manage_files" || re.Argument == "" {
				t.Errorf("error is not an *Error naming the rule, the tool and the argument: %#v", err)
			}
			// The tool's rules do not fit it: every call resolves to static.
			res := mustResolve(t, r, call(tool, `{"action":"read","path":"a"}`), nil)
			if res.Layer != LayerStatic || res.Problem == nil || !res.NeedsConfirmation() {
				t.Errorf("a tool whose rules do not fit resolved to %s (problem %v, confirm %v); want static with the problem", res.Layer, res.Problem, res.NeedsConfirmation())
			}
		})
	}
	// Expressions that fit.
	for _, when := range []string{
		`args.action == "read"`, `args.action in ["read", "append"]`, `has(args.force) && args.force == true`,
		`args.?force.orValue(false) == false`, `args.count == 2`, `args.count == 2.0`, `args.path.startsWith("/tmp/")`,
		`tool == "manage_files" && principal != ""`, `args.exists(k, k == "force")`,
	} {
		r := compile(t, Server{Rules: []Rule{{Name: "r", Tools: []string{"manage_files"}, When: when, Annotations: readOnly}}})
		if err := r.SetTools("up", []*mcp.Tool{filesTool()}); err != nil {
			t.Errorf("%s: %v", when, err)
		}
	}
}

func TestRuleContradictingItsTool(t *testing.T) {
	t.Parallel()
	// A rule that says "delete" but leaves the tool read-only.
	r := compile(t, Server{Rules: []Rule{{Name: "r", Tools: []string{"t"}, Hints: HintPatch{Effect: "delete"}}}})
	err := r.SetTools("up", []*mcp.Tool{{Name: "t", InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}})
	if err == nil || !strings.Contains(err.Error(), `rule "r": tool "t": its hints contradict the annotations`) {
		t.Fatalf("err = %v", err)
	}
}

// TestFirstMatchWins: rules are tried in order, deployer before pack, and
// the first match decides.
func TestFirstMatchWins(t *testing.T) {
	t.Parallel()
	r := compile(t, Server{
		Rules: []Rule{
			{Name: "read", Tools: []string{"manage_files"}, When: `args.action == "read"`, Annotations: readOnly, Hints: HintPatch{Effect: "read"}},
			{Name: "tmp", Tools: []string{"manage_files"}, When: `args.path.startsWith("/tmp/")`, Annotations: additive, Hints: HintPatch{Effect: "write"}},
		},
		Pack: []Rule{
			{Name: "pack-append", Tools: []string{"manage_files"}, When: `args.action == "append"`, Annotations: additive},
			{Name: "pack-read", Tools: []string{"manage_files"}, When: `args.action == "read"`, Hints: HintPatch{RequiresConfirmation: ptr(true)}},
		},
	})
	tool := filesTool()
	for _, c := range []struct {
		args, rule string
		layer      Layer
		confirm    bool
	}{
		{`{"action":"read","path":"/tmp/x"}`, "read", LayerRule, false},
		{`{"action":"delete","path":"/tmp/x"}`, "tmp", LayerRule, false},
		{`{"action":"append","path":"/home/x"}`, "pack-append", LayerPack, false},
		{`{"action":"delete","path":"/home/x"}`, "", LayerStatic, true},
	} {
		res := mustResolve(t, r, call(tool, c.args), nil)
		if res.Rule != c.rule || res.Layer != c.layer || res.NeedsConfirmation() != c.confirm {
			t.Errorf("%s: rule %q layer %s confirm %v; want %q %s %v", c.args, res.Rule, res.Layer, res.NeedsConfirmation(), c.rule, c.layer, c.confirm)
		}
	}
}

// TestEvaluationErrorStops: a rule that fails (it reads an argument the
// client left out) never lets a later, less cautious rule decide.
func TestEvaluationErrorStops(t *testing.T) {
	t.Parallel()
	r := compile(t, Server{Rules: []Rule{
		{Name: "forced", Tools: []string{"manage_files"}, When: `args.force == true`, Hints: HintPatch{RequiresConfirmation: ptr(true)}},
		{Name: "rest", Tools: []string{"manage_files"}, Annotations: readOnly},
	}})
	res := mustResolve(t, r, call(filesTool(), `{"action":"delete","path":"a"}`), nil)
	if res.Layer != LayerStatic || !res.NeedsConfirmation() {
		t.Fatalf("resolved by %s %q; want static", res.Layer, res.Rule)
	}
	var re *Error
	if !errors.As(res.Problem, &re) || re.Rule != "forced" || !strings.Contains(res.Problem.Error(), "no such key: force") {
		t.Errorf("problem = %v", res.Problem)
	}
	res = mustResolve(t, r, call(filesTool(), `{"action":"delete","path":"a","force":false}`), nil)
	if res.Rule != "rest" {
		t.Errorf("with force given: rule %q", res.Rule)
	}
}

func TestPartialPatchKeepsStatic(t *testing.T) {
	t.Parallel()
	// The rule only says the call is not destructive; the closed world
	// and the rest of the static declaration stay.
	r := compile(t, Server{Rules: []Rule{{Name: "append", Tools: []string{"manage_files"}, When: `args.action == "append"`, Annotations: additive}}})
	res := mustResolve(t, r, call(filesTool(), `{"action":"append","path":"a"}`), nil)
	e := res.Effective
	if e.Destructive.Value || e.OpenWorld.Value || e.ReadOnly.Value || e.Idempotent.Value || res.NeedsConfirmation() {
		t.Errorf("effective = %+v", e)
	}
	if e.Destructive.Source != policy.SourceResolved || e.RequiresConfirmation.Source != policy.SourceDerived {
		t.Errorf("sources: destructive %s, confirmation %s", e.Destructive.Source, e.RequiresConfirmation.Source)
	}
}

func TestPrincipalAndServer(t *testing.T) {
	t.Parallel()
	r := compile(t, Server{Rules: []Rule{
		{Name: "ops", When: `principal == "ops@example.com" && server == "up" && tool.startsWith("manage")`, Hints: HintPatch{RequiresConfirmation: ptr(false)}},
	}})
	tool := filesTool()
	c := call(tool, `{"action":"delete","path":"a"}`)
	if res := mustResolve(t, r, c, nil); res.Rule != "" || !res.NeedsConfirmation() {
		t.Errorf("anonymous: rule %q", res.Rule)
	}
	c.Principal = "ops@example.com"
	if res := mustResolve(t, r, c, nil); res.Rule != "ops" || res.NeedsConfirmation() {
		t.Errorf("ops: rule %q confirm %v", res.Rule, res.NeedsConfirmation())
	}
}

func TestOverrides(t *testing.T) {
	t.Parallel()
	r := compile(t, Server{
		Rules: []Rule{{Name: "read", Tools: []string{"manage_files"}, When: `args.action == "read"`, Annotations: readOnly, Hints: HintPatch{Effect: "read"}}},
		Overrides: map[string]Override{
			"manage_files": {Annotations: AnnotationPatch{DestructiveHint: ptr(true)}, Hints: HintPatch{ResultSensitivity: "confidential"}},
			"other":        {Hints: HintPatch{RequiresConfirmation: ptr(true)}},
		},
	})
	// The override calls manage_files destructive: the rule's read-only
	// does not survive it.
	res := mustResolve(t, r, call(filesTool(), `{"action":"read","path":"a"}`), nil)
	e := res.Effective
	if e.ReadOnly.Value || !e.Destructive.Value || !res.NeedsConfirmation() {
		t.Errorf("effective %+v: a resolution made a tool the deployer calls destructive read-only", e)
	}
	if e.ReadOnly.Source != policy.SourceOverride || e.Destructive.Source != policy.SourceOverride || e.ResultSensitivity.Source != policy.SourceOverride || e.Idempotent.Source != policy.SourceResolved {
		t.Errorf("sources: %s %s %s %s", e.ReadOnly.Source, e.Destructive.Source, e.ResultSensitivity.Source, e.Idempotent.Source)
	}
	if res.Rule != "read" || e.ResultSensitivity.Value != hints.SensitivityConfidential {
		t.Errorf("rule %q sensitivity %q", res.Rule, e.ResultSensitivity.Value)
	}
	// An override without annotations only sets hints, also on static.
	other := &mcp.Tool{Name: "other", InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}
	res = mustResolve(t, r, call(other, `{}`), nil)
	if !res.NeedsConfirmation() || res.Effective.RequiresConfirmation.Source != policy.SourceOverride || !res.Effective.ReadOnly.Value {
		t.Errorf("other: %+v", res.Effective)
	}
}

func TestArguments(t *testing.T) {
	t.Parallel()
	r := compile(t, Server{Rules: []Rule{{Name: "read", Tools: []string{"manage_files"}, When: `args.?action.orValue("") == "read"`, Annotations: readOnly}}})
	tool := filesTool()
	for _, bad := range []string{`[1]`, `"x"`, `{"action":`, `{"action":"read"}}`, `12`} {
		if _, err := r.Resolve(t.Context(), call(tool, bad), nil); !errors.Is(err, ErrInvalidArguments) {
			t.Errorf("%s: err = %v, want ErrInvalidArguments", bad, err)
		}
	}
	for _, none := range []string{``, `null`, ` {} `} {
		res := mustResolve(t, r, call(tool, none), nil)
		if res.Layer != LayerStatic || res.Problem != nil {
			t.Errorf("%q: %s %v", none, res.Layer, res.Problem)
		}
	}
	// Decoded arguments are used as they are.
	res := mustResolve(t, r, Call{Server: "up", Tool: tool, Args: map[string]any{"action": "read"}, Arguments: json.RawMessage(`[`)}, nil)
	if res.Rule != "read" {
		t.Errorf("Args: rule %q", res.Rule)
	}
	// Arguments beyond the limit resolve to static, with the reason.
	small, err := Compile(Config{MaxArgumentBytes: 64, Servers: map[string]Server{"up": {Rules: r.servers["up"].ruleList()}}})
	if err != nil {
		t.Fatal(err)
	}
	res = mustResolve(t, small, call(tool, `{"action":"read","path":"`+strings.Repeat("a", 100)+`"}`), nil)
	if res.Layer != LayerStatic || res.Problem == nil || !strings.Contains(res.Problem.Error(), "more than the 64") {
		t.Errorf("large arguments: %s %v", res.Layer, res.Problem)
	}
	if _, err := r.Resolve(t.Context(), Call{Server: "up"}, nil); err == nil {
		t.Error("nil tool: no error")
	}
}

// ruleList returns the rules a server was compiled from (tests only).
func (s *server) ruleList() []Rule {
	out := make([]Rule, len(s.deployer))
	for i, c := range s.deployer {
		out[i] = c.Rule
	}
	return out
}

func TestUnknownServerAndToolsWithoutRules(t *testing.T) {
	t.Parallel()
	r := compile(t, Server{})
	tool := filesTool()
	res := mustResolve(t, r, Call{Server: "elsewhere", Tool: tool}, nil)
	if res.Layer != LayerStatic || !res.NeedsConfirmation() || res.Effective.ReadOnly.Source != policy.SourceStatic {
		t.Errorf("unknown server: %+v", res)
	}
	if err := r.SetTools("elsewhere", []*mcp.Tool{tool}); err != nil {
		t.Error(err)
	}
}

// TestSetToolsReplaces: a changed catalog is checked again, and a tool
// that changed under the same pointer's name is re-checked on use.
func TestSetToolsReplaces(t *testing.T) {
	t.Parallel()
	r := compile(t, Server{Rules: []Rule{{Name: "r", Tools: []string{"manage_files"}, When: `args.action == "read"`, Annotations: readOnly}}})
	good := filesTool()
	if err := r.SetTools("up", []*mcp.Tool{good}); err != nil {
		t.Fatal(err)
	}
	// The upstream renames the argument: the rule no longer fits.
	changed := filesTool()
	props := changed.InputSchema.(map[string]any)["properties"].(map[string]any)
	props["op"] = props["action"]
	delete(props, "action")
	if err := r.SetTools("up", []*mcp.Tool{changed}); err == nil || !strings.Contains(err.Error(), `argument "action"`) {
		t.Fatalf("SetTools after the change: %v", err)
	}
	if res := mustResolve(t, r, call(changed, `{"op":"read","path":"a"}`), nil); res.Layer != LayerStatic || res.Problem == nil {
		t.Errorf("changed tool: %s %v", res.Layer, res.Problem)
	}
	// The core passes the original definition again (another pointer):
	// it is checked, and fits.
	if res := mustResolve(t, r, call(filesTool(), `{"action":"read","path":"a"}`), nil); res.Rule != "r" {
		t.Errorf("original definition again: rule %q problem %v", res.Rule, res.Problem)
	}
}

func TestConcurrentResolve(t *testing.T) {
	t.Parallel()
	r := compile(t, Server{Rules: []Rule{{Name: "r", Tools: []string{"manage_files"}, When: `args.action == "read"`, Annotations: readOnly}}})
	tool := filesTool()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				if i == 0 && j%50 == 0 {
					_ = r.SetTools("up", []*mcp.Tool{tool})
				}
				res, err := r.Resolve(context.Background(), call(tool, `{"action":"read","path":"a"}`), nil)
				if err != nil || res.Rule != "r" {
					t.Errorf("rule %q err %v", res.Rule, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestResolutionForClients(t *testing.T) {
	t.Parallel()
	res := Result{
		Effective: policy.Evaluate(policy.Input{Static: &mcp.ToolAnnotations{ReadOnlyHint: true}}),
		Meta:      map[string]any{"mcp.dev/effect": "read", "mcp.dev/security-schemes": map[string]any{}, "mcp.dev/policy-hints": map[string]any{"effect": "read"}, "example.com/cost": 3},
	}
	rr := res.Resolution()
	if !rr.Annotations.ReadOnlyHint || rr.Hints.Effect != hints.EffectRead || rr.Hints.ResultSensitivity != "" {
		t.Errorf("resolution %+v", rr)
	}
	if len(rr.Meta) != 1 || rr.Meta["example.com/cost"] != 3 {
		t.Errorf("meta %v: only keys other than the hints and security schemes travel", rr.Meta)
	}
}

// upstream is a real server that serves tools/resolve through the resolve
// package, over the SDK's in-memory transport.
type upstream struct {
	cs *mcp.ClientSession
	ss *mcp.ServerSession
}

func startUpstream(t *testing.T, extension bool, withResolve bool) *upstream {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "v1"}, nil)
	handler := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	tool := filesTool()
	tool.Annotations = nil
	if withResolve {
		rs := resolve.NewServer(server, nil)
		rs.AddTool(tool, handler, &resolve.Table{
			Argument: "action",
			Rows: map[string]resolve.Resolution{
				"read":   {Annotations: preflight.Annotations{ReadOnlyHint: true, IdempotentHint: true}, Hints: hints.Hints{Effect: hints.EffectRead, RequiresConfirmation: hints.Bool(false)}},
				"append": {Hints: hints.Hints{Effect: hints.EffectWrite, RequiresConfirmation: hints.Bool(false)}},
				"delete": {Annotations: preflight.Annotations{DestructiveHint: true, IdempotentHint: true}, Hints: hints.Hints{Effect: hints.EffectDelete, RequiresConfirmation: hints.Bool(true)}},
			},
		})
	} else {
		server.AddTool(tool, handler)
	}
	var client *mcp.Client
	if extension {
		client = resolve.NewClient(&mcp.Implementation{Name: "gateway", Version: "v1"}, nil)
	} else {
		client = mcp.NewClient(&mcp.Implementation{Name: "gateway", Version: "v1"}, nil)
		if err := resolve.EnableClient(client); err != nil {
			t.Fatal(err)
		}
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := server.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := client.Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	u := &upstream{cs: cs, ss: ss}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return u
}

// listed is the tool as the upstream lists it (the static declaration the
// table derives: destructive, not idempotent, closed world).
func (u *upstream) listed(t *testing.T) *mcp.Tool {
	t.Helper()
	res, err := u.cs.ListTools(t.Context(), nil)
	if err != nil || len(res.Tools) != 1 {
		t.Fatalf("tools/list: %v %v", res, err)
	}
	return res.Tools[0]
}

func TestUpstreamResolves(t *testing.T) {
	t.Parallel()
	for _, ext := range []bool{true, false} {
		shape := map[bool]string{true: "extension", false: "seed"}[ext]
		t.Run(shape, func(t *testing.T) {
			t.Parallel()
			u := startUpstream(t, ext, true)
			tool := u.listed(t)
			r := compile(t, Server{})
			res := mustResolve(t, r, call(tool, `{"action":"read","path":"a"}`), Session(u.cs))
			if res.Layer != LayerUpstream || res.Shape != shape || res.Problem != nil || res.Upstream == nil {
				t.Fatalf("layer %s shape %q problem %v", res.Layer, res.Shape, res.Problem)
			}
			if !res.Effective.ReadOnly.Value || res.NeedsConfirmation() || res.Effective.Effect.Value != hints.EffectRead || res.Effective.ReadOnly.Source != policy.SourceResolved {
				t.Errorf("read: %+v", res.Effective)
			}
			res = mustResolve(t, r, call(tool, `{"action":"delete","path":"a"}`), Session(u.cs))
			if !res.NeedsConfirmation() || res.Effective.Effect.Value != hints.EffectDelete {
				t.Errorf("delete: %+v", res.Effective)
			}
			// The upstream rejects arguments its schema refuses: -32602.
			_, err := r.Resolve(t.Context(), call(tool, `{"action":5,"path":"a"}`), Session(u.cs))
			if !errors.Is(err, ErrInvalidArguments) {
				t.Errorf("invalid arguments: %v", err)
			}
		})
	}
}

// TestUpstreamBeyondBounds: the tool as the gateway pinned it says
// read-only; the upstream now resolves a delete as destructive. It is not
// believed less than it says, nor the pinned declaration more: the more
// cautious of both is used.
func TestUpstreamBeyondBounds(t *testing.T) {
	t.Parallel()
	u := startUpstream(t, true, true)
	pinned := u.listed(t)
	pinned.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: true}
	r := compile(t, Server{})
	res := mustResolve(t, r, call(pinned, `{"action":"delete","path":"a"}`), Session(u.cs))
	if res.Layer != LayerUpstream || res.Problem == nil || !strings.Contains(res.Problem.Error(), "readOnlyHint") {
		t.Fatalf("layer %s problem %v", res.Layer, res.Problem)
	}
	if res.Effective.ReadOnly.Value || !res.Effective.Destructive.Value || !res.NeedsConfirmation() {
		t.Errorf("effective %+v; want the cautious side", res.Effective)
	}
}

// TestDeployerBeforeUpstreamBeforePack: a deployer rule decides without
// asking; the upstream's answer wins over the pack; the pack decides when
// the upstream cannot answer.
func TestDeployerBeforeUpstreamBeforePack(t *testing.T) {
	t.Parallel()
	s := Server{
		Rules: []Rule{{Name: "mine", Tools: []string{"manage_files"}, When: `args.path.startsWith("/srv/")`, Hints: HintPatch{RequiresConfirmation: ptr(true)}}},
		Pack:  []Rule{{Name: "pack", Tools: []string{"manage_files"}, When: `args.action == "append"`, Hints: HintPatch{RequiresConfirmation: ptr(true)}}},
	}
	r := compile(t, s)
	u := startUpstream(t, true, true)
	tool := u.listed(t)
	asked := 0
	counting := UpstreamFunc(func(ctx context.Context, name string, args map[string]any) (*preflight.ResolveResult, error) {
		asked++
		return Session(u.cs).ResolveTool(ctx, name, args)
	})
	res := mustResolve(t, r, call(tool, `{"action":"read","path":"/srv/a"}`), counting)
	if res.Rule != "mine" || asked != 0 || !res.NeedsConfirmation() {
		t.Errorf("deployer rule: rule %q asked %d", res.Rule, asked)
	}
	res = mustResolve(t, r, call(tool, `{"action":"append","path":"/home/a"}`), counting)
	if res.Layer != LayerUpstream || asked != 1 || res.NeedsConfirmation() {
		t.Errorf("upstream: layer %s asked %d confirm %v", res.Layer, asked, res.NeedsConfirmation())
	}
	// An upstream without tools/resolve: -32601, then the pack.
	plain := startUpstream(t, true, false)
	res = mustResolve(t, r, call(tool, `{"action":"append","path":"/home/a"}`), Session(plain.cs))
	if res.Layer != LayerPack || res.Rule != "pack" || res.Problem == nil || !strings.Contains(res.Problem.Error(), "upstream tools/resolve failed") {
		t.Errorf("no tools/resolve: layer %s rule %q problem %v", res.Layer, res.Rule, res.Problem)
	}
	res = mustResolve(t, r, call(tool, `{"action":"read","path":"/home/a"}`), Session(plain.cs))
	if res.Layer != LayerStatic || res.Problem == nil || !res.NeedsConfirmation() {
		t.Errorf("no tools/resolve, no rule: layer %s problem %v", res.Layer, res.Problem)
	}
}

// TestUntrusted: an untrusted upstream's annotations and hints, static or
// resolved, only add caution.
func TestUntrusted(t *testing.T) {
	t.Parallel()
	u := startUpstream(t, true, true)
	tool := u.listed(t)
	r := compile(t, Server{Trust: Untrusted})
	res := mustResolve(t, r, call(tool, `{"action":"read","path":"a"}`), Session(u.cs))
	e := res.Effective
	if res.Layer != LayerUpstream || e.ReadOnly.Value || !e.Destructive.Value || !e.OpenWorld.Value || !res.NeedsConfirmation() {
		t.Errorf("untrusted read: %+v", e)
	}
	res = mustResolve(t, r, call(tool, `{"action":"delete","path":"a"}`), Session(u.cs))
	if res.Effective.Effect.Value != hints.EffectDelete || !res.NeedsConfirmation() {
		t.Errorf("untrusted delete keeps its caution: %+v", res.Effective)
	}
	// Static: a read-only claim, idempotent, no confirmation: all ignored;
	// a sensitivity above public is kept.
	claims := &mcp.Tool{Name: "t", InputSchema: map[string]any{"type": "object"},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: ptr(false), OpenWorldHint: ptr(false)},
		Meta:        mcp.Meta{"mcp.dev/effect": "read", "mcp.dev/idempotent": true, "mcp.dev/requiresConfirmation": false, "mcp.dev/resultSensitivity": "confidential"}}
	res = mustResolve(t, r, call(claims, `{}`), nil)
	e = res.Effective
	if e.ReadOnly.Value || !e.Destructive.Value || !e.OpenWorld.Value || e.Effect.Value == hints.EffectRead || e.IdempotentCall.Value || !res.NeedsConfirmation() || e.ResultSensitivity.Value != hints.SensitivityConfidential {
		t.Errorf("untrusted static: %+v", e)
	}
	// The deployer's rules still apply to an untrusted upstream.
	r = compile(t, Server{Trust: Untrusted, Rules: []Rule{{Name: "ok", Tools: []string{"t"}, Annotations: readOnly}}})
	if res := mustResolve(t, r, call(claims, `{}`), nil); res.NeedsConfirmation() || res.Rule != "ok" {
		t.Errorf("deployer rule on an untrusted upstream: %+v", res.Effective)
	}
}

// TestUpstreamTimeout: an upstream that does not answer in time is not
// waited for; the call resolves without it.
func TestUpstreamTimeout(t *testing.T) {
	t.Parallel()
	r, err := Compile(Config{UpstreamTimeout: 1, Servers: map[string]Server{"up": {}}})
	if err != nil {
		t.Fatal(err)
	}
	slow := UpstreamFunc(func(ctx context.Context, _ string, _ map[string]any) (*preflight.ResolveResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	res := mustResolve(t, r, call(filesTool(), `{"action":"read","path":"a"}`), slow)
	if res.Layer != LayerStatic || !errors.Is(res.Problem, context.DeadlineExceeded) {
		t.Errorf("layer %s problem %v", res.Layer, res.Problem)
	}
	// The caller's own cancellation is the caller's error.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r2 := compile(t, Server{})
	if _, err := r2.Resolve(ctx, call(filesTool(), `{}`), slow); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestUnusableUpstreamAnswers(t *testing.T) {
	t.Parallel()
	tool := filesTool()
	r := compile(t, Server{})
	for name, res := range map[string]*preflight.ResolveResult{
		"empty":         {},
		"other tool":    {ResultType: "complete", Name: "other", Annotations: &preflight.Annotations{ReadOnlyHint: true}},
		"bad hint":      {ResultType: "complete", Name: "manage_files", Annotations: &preflight.Annotations{ReadOnlyHint: true}, ResultBase: mcp.ResultBase{Meta: mcp.Meta{"mcp.dev/policy-hints": map[string]any{"effect": "vanish"}}}},
		"contradiction": {ResultType: "complete", Name: "manage_files", Annotations: &preflight.Annotations{ReadOnlyHint: true}, ResultBase: mcp.ResultBase{Meta: mcp.Meta{"mcp.dev/policy-hints": map[string]any{"effect": "delete"}}}},
		"empty tool":    {Tool: &preflight.Tool{}},
	} {
		up := UpstreamFunc(func(context.Context, string, map[string]any) (*preflight.ResolveResult, error) { return res, nil })
		got := mustResolve(t, r, call(tool, `{}`), up)
		if got.Layer != LayerStatic || got.Problem == nil || !got.NeedsConfirmation() {
			t.Errorf("%s: layer %s problem %v", name, got.Layer, got.Problem)
		}
	}
}

func TestListing(t *testing.T) {
	t.Parallel()
	// A read-only, closed-world tool; a rule says some calls reach out.
	tool := &mcp.Tool{Name: "lookup", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"url": map[string]any{"type": "string"}}},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}, Meta: mcp.Meta{"mcp.dev/effect": "read", "mcp.dev/resultSensitivity": "public"}}
	r := compile(t, Server{
		Rules:     []Rule{{Name: "remote", Tools: []string{"lookup"}, When: `has(args.url)`, Annotations: AnnotationPatch{OpenWorldHint: ptr(true)}, Hints: HintPatch{ResultSensitivity: "internal"}}},
		Overrides: map[string]Override{"lookup": {Hints: HintPatch{Idempotent: ptr(true)}}},
	})
	ann, h := r.Listing("up", tool)
	if !ann.ReadOnlyHint || !ann.OpenWorldHint || h.Effect != hints.EffectRead || h.ResultSensitivity != hints.SensitivityInternal || h.Idempotent == nil || !*h.Idempotent {
		t.Fatalf("listing %+v %+v", ann, h)
	}
	// Every resolution stays within the listing.
	for _, args := range []string{`{}`, `{"url":"https://example.com"}`} {
		res := mustResolve(t, r, call(tool, args), nil)
		rr := res.Resolution()
		if over := exceeds(rr.Annotations, rr.Hints, ann, h); len(over) > 0 {
			t.Errorf("%s: resolution beyond the listing: %v", args, over)
		}
	}
	// Without the raise, the rule's answer would exceed the upstream's own
	// declaration.
	if over := exceeds(mustResolve(t, r, call(tool, `{"url":"x"}`), nil).Effective.Annotations(), hints.Hints{}, preflight.AnnotationsOf(tool.Annotations), hints.Hints{}); len(over) == 0 {
		t.Error("the test's rule does not exceed the upstream's declaration")
	}
}

func TestUnlistedToolsReported(t *testing.T) {
	t.Parallel()
	r := compile(t, Server{
		Rules:     []Rule{{Name: "typo", Tools: []string{"manage_file"}, Annotations: readOnly}},
		Pack:      []Rule{{Name: "pack", Tools: []string{"absent"}, Annotations: readOnly}},
		Overrides: map[string]Override{"gone": {Hints: HintPatch{RequiresConfirmation: ptr(true)}}},
	})
	err := r.SetTools("up", []*mcp.Tool{filesTool()})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`rule "typo": tool "manage_file": the upstream lists no such tool (tools: manage_files)`, `override: tool "gone": the upstream lists no such tool`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\nlacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "absent") {
		t.Errorf("a pack rule for a tool the upstream does not enable is reported: %v", err)
	}
}
