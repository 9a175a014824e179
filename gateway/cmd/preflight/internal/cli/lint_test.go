package cli

import (
	"context"
	"encoding/json"
	"maps"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/examples/files/filetool"
	"github.com/preflightmcp/preflight/examples/folders/foldertool"
	"github.com/preflightmcp/preflight/inject"
	"github.com/preflightmcp/preflight/lint"
)

// defectTools is the tools/list of the defect server: one tool per
// defect lint looks for, and a clean one. Tools whose name is a key of
// resolvers are resolvable.
const defectTools = `[
  {"name": "clean_read", "description": "Reads nothing in particular.", "inputSchema": {"type": "object"},
   "annotations": {"readOnlyHint": true, "openWorldHint": false}},
  {"name": "Bad Name!", "description": "A name with spaces.", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}},
  {"name": "undocumented", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}},
  {"name": "stringly", "description": "Takes a string, not an object.", "inputSchema": {"type": "string"}, "annotations": {"readOnlyHint": true}},
  {"name": "bare", "description": "Declares nothing.", "inputSchema": {"type": "object"}},
  {"name": "patch_record", "description": "Changes a record.", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": false, "idempotentHint": true}},
  {"name": "wipe_disk", "description": "Wipes the disk.", "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": true}},
  {"name": "odd_hints", "description": "Hints outside the vocabulary.", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true},
   "_meta": {"mcp.dev/effect": "explode", "mcp.dev/requiresConfirmation": "yes"}},
  {"name": "contradicts", "description": "Read-only by annotation, a delete by hint.", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true},
   "_meta": {"mcp.dev/effect": "delete"}},
  {"name": "delete_everything", "description": "Claims to be read-only.", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}},
  {"name": "manage", "description": "Reads or deletes; declared as if it never destroyed.",
   "inputSchema": {"type": "object", "properties": {"action": {"type": "string", "enum": ["read", "delete"]}}, "required": ["action"]},
   "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
   "_meta": {"mcp.dev/effect": "write", "mcp.dev/requiresConfirmation": false}},
  {"name": "overcautious", "description": "Declared destructive, resolves read-only for every variant.",
   "inputSchema": {"type": "object", "properties": {"verbose": {"type": "boolean"}}},
   "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": false},
   "_meta": {"mcp.dev/requiresConfirmation": true}},
  {"name": "flaky", "description": "Answers differently each time.", "inputSchema": {"type": "object"},
   "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": true}},
  {"name": "lax", "description": "Resolves whatever it is sent.",
   "inputSchema": {"type": "object", "properties": {"mode": {"type": "string", "enum": ["a", "b"]}}, "required": ["mode"]},
   "annotations": {"readOnlyHint": true, "openWorldHint": false}},
  {"name": "wrong_code", "description": "Refuses bad arguments with -32603.",
   "inputSchema": {"type": "object", "properties": {"mode": {"type": "string", "enum": ["a", "b"]}}, "required": ["mode"]},
   "annotations": {"readOnlyHint": true, "openWorldHint": false}},
  {"name": "malformed", "description": "Leaves out openWorldHint in the extension shape.", "inputSchema": {"type": "object"},
   "annotations": {"readOnlyHint": true, "openWorldHint": false}},
  {"name": "broken", "description": "Fails to resolve.", "inputSchema": {"type": "object"},
   "annotations": {"readOnlyHint": true, "openWorldHint": false}}
]`

// defectResolutions are the resolvable tools' answers: annotations (all
// four) and _meta, by tool and then by the value of its first enum
// argument ("" when it has none).
var defectResolutions = map[string]map[string]map[string]any{
	"manage": {
		"read":   {"annotations": ann(true, false, true, false), "_meta": map[string]any{"mcp.dev/effect": "read"}},
		"delete": {"annotations": ann(false, true, true, false), "_meta": map[string]any{"mcp.dev/effect": "delete", "mcp.dev/requiresConfirmation": false}},
	},
	"overcautious": {"": {"annotations": ann(true, false, true, false)}},
	"flaky":        {"": {"annotations": ann(false, false, false, true)}},
	"lax":          {"": {"annotations": ann(true, false, true, false)}},
	"wrong_code":   {"": {"annotations": ann(true, false, true, false)}},
	"malformed":    {"": {"annotations": map[string]any{"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true}}},
	"broken":       {},
}

func ann(ro, d, i, ow bool) map[string]any {
	return map[string]any{"readOnlyHint": ro, "destructiveHint": d, "idempotentHint": i, "openWorldHint": ow}
}

// defectOptions choose the defect server's capabilities and markers.
type defectOptions struct {
	extCapability, seedCapability bool
	markers                       bool
}

// defectResult is a tools/resolve result written as given.
type defectResult struct {
	mcp.ResultBase
	raw map[string]any
}

func (r *defectResult) MarshalJSON() ([]byte, error) { return json.Marshal(r.raw) }

// rawToolsResult is a tools/list result with raw tools.
type rawToolsResult struct {
	*mcp.ListToolsResult
	Tools []map[string]any `json:"tools"`
}

type capsInitializeResult struct {
	*mcp.InitializeResult
	Capabilities map[string]any `json:"capabilities"`
}

type capsDiscoverResult struct {
	*mcp.DiscoverResult
	Capabilities map[string]any `json:"capabilities"`
}

// defectServer serves the defect tools over streamable HTTP in both eras
// and returns the URL.
func defectServer(t *testing.T, opts defectOptions) string {
	t.Helper()
	var tools []map[string]any
	if err := json.Unmarshal([]byte(defectTools), &tools); err != nil {
		t.Fatal(err)
	}
	byName := map[string]map[string]any{}
	schemas := map[string]*jsonschema.Resolved{}
	for _, tool := range tools {
		name := tool["name"].(string)
		byName[name] = tool
		if _, ok := defectResolutions[name]; ok {
			b, _ := json.Marshal(tool["inputSchema"])
			var s jsonschema.Schema
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatal(err)
			}
			rs, err := s.Resolve(nil)
			if err != nil {
				t.Fatal(err)
			}
			schemas[name] = rs
			if opts.markers {
				meta, _ := tool["_meta"].(map[string]any)
				meta = maps.Clone(meta)
				if meta == nil {
					meta = map[string]any{}
				}
				meta[preflight.ExtensionToolResolution] = map[string]any{"resolvable": true}
				tool["_meta"] = meta
				tool["resolve"] = true
			}
		}
	}

	s := mcp.NewServer(&mcp.Implementation{Name: "defects", Version: "v1"}, nil)
	// One real tool, so that the server serves tools/list at all.
	mcp.AddTool(s, &mcp.Tool{Name: "clean_read"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	var flips atomic.Int64
	err := mcp.AddReceivingCustomMethod(s, preflight.MethodResolve, func(ctx context.Context, ss *mcp.ServerSession, p *preflight.ResolveParams) (*defectResult, error) {
		req := &mcp.ServerRequest[*preflight.ResolveParams]{Session: ss, Params: p}
		caps := req.ClientCapabilities()
		extension := false
		if caps != nil {
			_, extension = caps.Extensions[preflight.ExtensionToolResolution]
		}
		rows, resolvable := defectResolutions[p.Name]
		if !resolvable {
			return nil, &jsonrpc.Error{Code: preflight.CodeInvalidParams, Message: "unknown or unresolvable tool " + p.Name}
		}
		switch p.Name {
		case "lax": // no validation at all
		case "wrong_code", "broken":
			if err := schemas[p.Name].Validate(p.Arguments); err != nil || p.Name == "broken" {
				return nil, &jsonrpc.Error{Code: preflight.CodeInternalError, Message: "could not resolve"}
			}
		default:
			if err := schemas[p.Name].Validate(p.Arguments); err != nil {
				return nil, &jsonrpc.Error{Code: preflight.CodeInvalidParams, Message: err.Error()}
			}
		}
		key := ""
		if v, ok := p.Arguments["action"].(string); ok {
			key = v
		}
		row := maps.Clone(rows[key])
		if row == nil {
			row = maps.Clone(rows[""])
		}
		if p.Name == "flaky" && flips.Add(1)%2 == 0 {
			row["annotations"] = ann(false, false, false, false)
		}
		if extension {
			out := map[string]any{"resultType": "complete", "name": p.Name, "annotations": row["annotations"]}
			if m, ok := row["_meta"].(map[string]any); ok {
				// The extension shape carries the hints as one object.
				obj := map[string]any{}
				for k, v := range m {
					obj[strings.TrimPrefix(k, "mcp.dev/")] = v
				}
				out["_meta"] = map[string]any{preflight.MetaPolicyHints: obj}
			}
			return &defectResult{raw: out}, nil
		}
		tool := maps.Clone(byName[p.Name])
		a := maps.Clone(row["annotations"].(map[string]any))
		if p.Name == "malformed" {
			a["openWorldHint"] = false // the seed shape is fine
		}
		tool["annotations"] = a
		if m, ok := row["_meta"]; ok {
			tool["_meta"] = m
		}
		return &defectResult{raw: map[string]any{"tool": tool}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	capabilities := func(c *mcp.ServerCapabilities) map[string]any {
		var m map[string]any
		b, _ := json.Marshal(c)
		_ = json.Unmarshal(b, &m)
		if m == nil {
			m = map[string]any{}
		}
		if opts.extCapability {
			ext, _ := m["extensions"].(map[string]any)
			if ext == nil {
				ext = map[string]any{}
			}
			ext[preflight.ExtensionToolResolution] = map[string]any{}
			m["extensions"] = ext
		}
		if opts.seedCapability {
			tc, _ := m["tools"].(map[string]any)
			if tc == nil {
				tc = map[string]any{}
			}
			tc["resolve"] = true
			m["tools"] = tc
		}
		return m
	}
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			switch r := res.(type) {
			case *mcp.ListToolsResult:
				return &rawToolsResult{ListToolsResult: r, Tools: tools}, nil
			case *mcp.InitializeResult:
				return &capsInitializeResult{InitializeResult: r, Capabilities: capabilities(r.Capabilities)}, nil
			case *mcp.DiscoverResult:
				return &capsDiscoverResult{DiscoverResult: r, Capabilities: capabilities(r.Capabilities)}, nil
			}
			return res, nil
		}
	})
	ts := httptest.NewServer(endpoint.NewHandler(s, nil))
	t.Cleanup(ts.Close)
	return ts.URL + endpoint.Path
}

// lintDoc is the part of lint's JSON output the tests read.
type lintDoc struct {
	Target struct {
		Kind         string             `json:"kind"`
		Capabilities *lint.Capabilities `json:"capabilities"`
		Tools        int                `json:"tools"`
	} `json:"target"`
	Failed     bool           `json:"failed"`
	Counts     map[string]int `json:"counts"`
	Findings   []lint.Finding `json:"findings"`
	Suppressed []lint.Finding `json:"suppressed"`
}

func (d *lintDoc) checks(tool string) []string {
	var out []string
	for _, f := range d.Findings {
		if f.Tool == tool && !slices.Contains(out, f.Check) {
			out = append(out, f.Check)
		}
	}
	return out
}

// TestLintDefects runs lint against a server with every defect and checks
// that it fails and names each one, in both protocol eras.
func TestLintDefects(t *testing.T) {
	t.Parallel()
	url := defectServer(t, defectOptions{extCapability: true, seedCapability: true, markers: true})
	want := map[string][]string{
		"clean_read":        nil,
		"Bad Name!":         {lint.CheckToolName},
		"undocumented":      {lint.CheckDescriptionMissing},
		"stringly":          {lint.CheckInputSchemaObject},
		"bare":              {lint.CheckNoAnnotations},
		"patch_record":      {lint.CheckDestructiveImplicit},
		"wipe_disk":         {lint.CheckDestructiveUnconfirmed},
		"odd_hints":         {lint.CheckHintInvalid},
		"contradicts":       {lint.CheckHintContradiction},
		"delete_everything": {lint.CheckReadOnlyWriteName},
		"manage":            {lint.CheckDestructiveUnconfirmed, lint.CheckResolveBounds},
		"overcautious":      {lint.CheckNotWorstCase},
		"flaky":             {lint.CheckNondeterministic},
		"lax":               {lint.CheckAcceptsInvalid},
		"wrong_code":        {lint.CheckInvalidCode},
		"malformed":         {lint.CheckResolveMalformed},
		"broken":            {lint.CheckResolveFailed},
	}
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			code, out, errOut := runMain(t, "lint", "-url", url, "-era", era, "-severity", "info", "-format", "json")
			if code != exitFailure {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitFailure, errOut)
			}
			var doc lintDoc
			decodeJSON(t, out, &doc)
			if !doc.Failed || doc.Target.Tools != len(want) {
				t.Errorf("failed %v, tools %d", doc.Failed, doc.Target.Tools)
			}
			for tool, checks := range want {
				got := doc.checks(tool)
				slices.Sort(got)
				slices.Sort(checks)
				if !slices.Equal(got, checks) {
					t.Errorf("%s: checks %v, want %v", tool, got, checks)
				}
			}
			// Server-level: the unknown tool is refused with -32602: no finding.
			for _, f := range doc.Findings {
				if f.Tool == "" {
					t.Errorf("server-level finding: %+v", f)
				}
			}

			// The default severity (error) still fails, and the text names
			// each check with its fix.
			code, out, _ = runMain(t, "lint", "-url", url, "-era", era)
			if code != exitFailure {
				t.Fatalf("text: exit %d, want %d", code, exitFailure)
			}
			for _, id := range []string{"tool-name", "input-schema-object", "destructive-unconfirmed", "hint-invalid",
				"hint-contradiction", "resolve-bounds", "resolve-accepts-invalid", "resolve-malformed"} {
				if !strings.Contains(out, " error "+id+": ") {
					t.Errorf("text output does not name %s:\n%s", id, out)
				}
			}
			if !strings.Contains(out, "  fix: ") || !strings.Contains(out, "failing") {
				t.Errorf("text output lacks fixes or the verdict:\n%s", out)
			}
		})
	}
}

// TestLintSeverityThreshold checks exit 0 when every finding is below
// -severity.
func TestLintSeverityThreshold(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cat := filepath.Join(dir, "c.json")
	writeFile(t, cat, `{"tools": [{"name": "get_x", "description": "d", "inputSchema": {"type": "object"},
		"annotations": {"readOnlyHint": false, "destructiveHint": false}}]}`)
	for sev, wantCode := range map[string]int{"info": exitFailure, "warning": exitOK, "error": exitOK} {
		code, out, errOut := runMain(t, "lint", cat, "-severity", sev)
		if code != wantCode {
			t.Errorf("-severity %s: exit %d, want %d\n%s%s", sev, code, wantCode, out, errOut)
		}
		if !strings.Contains(out, "read-name-not-readonly") {
			t.Errorf("-severity %s: the info finding is not shown:\n%s", sev, out)
		}
	}
}

func TestLintMarkerCapability(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts defectOptions
		want string
		n    int
	}{
		{"markers without capabilities", defectOptions{markers: true}, lint.CheckCapabilityMissing, 2},
		{"capabilities without markers", defectOptions{extCapability: true, seedCapability: true}, lint.CheckMarkerMissing, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := defectServer(t, tc.opts)
			code, out, errOut := runMain(t, "lint", "-url", url, "-severity", "warning", "-format", "json")
			if code != exitFailure {
				t.Fatalf("exit %d; stderr:\n%s", code, errOut)
			}
			var doc lintDoc
			decodeJSON(t, out, &doc)
			n := 0
			for _, f := range doc.Findings {
				if f.Tool == "" && f.Check == tc.want {
					n++
				}
			}
			if n != tc.n {
				t.Errorf("%d server-level %s findings, want %d: %+v", n, tc.want, tc.n, doc.Findings)
			}
		})
	}
}

// foldersServer serves examples/folders over streamable HTTP.
func foldersServer(t *testing.T) string {
	t.Helper()
	root, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	ts := httptest.NewServer(endpoint.NewHandler(foldertool.NewServer(root, &inject.Options{Audience: "folders"}), nil))
	t.Cleanup(ts.Close)
	return ts.URL + endpoint.Path
}

// TestLintExamples: the project's own examples pass lint (exit 0), in
// both eras; their findings below the threshold are logged.
func TestLintExamples(t *testing.T) {
	t.Parallel()
	files, _ := filesServer(t)
	for name, url := range map[string]string{"files": files, "folders": foldersServer(t)} {
		for _, era := range eras {
			t.Run(name+"/"+era, func(t *testing.T) {
				code, out, errOut := runMain(t, "lint", "-url", url, "-era", era)
				if code != exitOK {
					t.Fatalf("exit %d, want 0\n%s%s", code, out, errOut)
				}
				_, out, _ = runMain(t, "lint", "-url", url, "-era", era, "-severity", "info")
				t.Logf("at -severity info:\n%s", out)
				if name == "files" && !strings.Contains(out, "1 resolvable, 4 argument variants probed") {
					t.Errorf("manage_files was not probed for its four actions:\n%s", out)
				}
			})
		}
	}
}

// TestLintStdio lints the files example started over stdio, as a CI job
// would.
func TestLintStdio(t *testing.T) {
	t.Parallel()
	bin := buildExample(t, "files")
	code, out, errOut := runMain(t, "lint", "-severity", "info", "--", bin, "-root", t.TempDir())
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "server files v0.1.0") || !strings.Contains(out, "4 argument variants probed") {
		t.Errorf("output:\n%s", out)
	}
}

var (
	buildMu    sync.Mutex
	buildCache = map[string]string{}
)

// buildExample builds examples/NAME once per test binary.
func buildExample(t *testing.T, name string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if bin, ok := buildCache[name]; ok {
		return bin
	}
	dir, err := os.MkdirTemp("", "preflight-lint-example-")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", bin, "./examples/"+name)
	cmd.Dir = filepath.Join("..", "..", "..", "..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/%s: %v\n%s", name, err, out)
	}
	buildCache[name] = bin
	return bin
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLintExitCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	badCfg := filepath.Join(dir, "bad.json")
	writeFile(t, badCfg, `{"ignore": [{"check": "no-annotations", "tool": "x"}]}`)
	cat := filepath.Join(dir, "c.json")
	writeFile(t, cat, `{"tools": [{"name": "get_x", "description": "Gets x.", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}}]}`)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"lint"}, exitUsage, "nothing to read"},
		{[]string{"lint", cat, "-url", "http://x"}, exitUsage, "not both"},
		{[]string{"lint", cat, "-severity", "fatal"}, exitUsage, `unknown severity "fatal"`},
		{[]string{"lint", cat, "-format", "xml"}, exitUsage, `invalid value "xml" for flag -format: want text, json or sarif`},
		{[]string{"lint", cat, "-config", badCfg}, exitUsage, "a reason is required"},
		{[]string{"lint", cat, "-config", filepath.Join(dir, "none.json")}, exitUsage, "no such file"},
		{[]string{"lint", cat, "extra"}, exitUsage, "one catalog file at a time, got 2"},
		{[]string{"lint", "-list-checks", "-format", "sarif"}, exitUsage, "text or json"},
		{[]string{"lint", filepath.Join(dir, "absent.json")}, exitCouldNotRun, "absent.json: no such file"},
		{[]string{"lint", badCfg}, exitCouldNotRun, `no "tools" array`},
		{[]string{"lint", "-url", "http://127.0.0.1:1/mcp", "-timeout", "10s"}, exitCouldNotRun, "connect to http://127.0.0.1:1/mcp: connection refused"},
		{[]string{"lint", "--", "false"}, exitCouldNotRun, "connect to false: the server exited (exit status 1) before the handshake"},
		{[]string{"lint", "--", "preflight-no-such-command"}, exitCouldNotRun, "command not found: preflight-no-such-command"},
		{[]string{"docs", filepath.Join(dir, "absent.json")}, exitCouldNotRun, "no such file"},
		{[]string{"docs", cat, "-format", "pdf"}, exitUsage, `invalid value "pdf" for flag -format: want markdown, html or json`},
		{[]string{"lint", cat}, exitOK, ""},
	} {
		code, _, errOut := runMain(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}

func TestLintConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cat := filepath.Join(dir, "c.json")
	writeFile(t, cat, `{"tools": [{"name": "wipe", "description": "d", "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": true}}]}`)
	cfg := filepath.Join(dir, "lint.json")
	writeFile(t, cfg, `{"ignore": [{"check": "destructive-unconfirmed", "tool": "wipe", "reason": "the client always confirms this one"}]}`)
	if code, _, _ := runMain(t, "lint", cat); code != exitFailure {
		t.Fatalf("without the configuration: exit %d, want 1", code)
	}
	code, out, errOut := runMain(t, "lint", cat, "-config", cfg, "-format", "json")
	if code != exitOK {
		t.Fatalf("with the configuration: exit %d, want 0\n%s%s", code, out, errOut)
	}
	var doc lintDoc
	decodeJSON(t, out, &doc)
	if len(doc.Findings) != 0 || len(doc.Suppressed) != 1 || doc.Suppressed[0].Suppressed != "the client always confirms this one" {
		t.Errorf("findings %+v, suppressed %+v", doc.Findings, doc.Suppressed)
	}
	code, out, _ = runMain(t, "lint", cat, "-config", cfg, "-format", "sarif")
	if code != exitOK {
		t.Fatalf("sarif: exit %d", code)
	}
	var sarif struct {
		Version string `json:"version"`
		Runs    []struct {
			Results []struct {
				RuleID       string `json:"ruleId"`
				Suppressions []struct {
					Kind          string `json:"kind"`
					Justification string `json:"justification"`
				} `json:"suppressions"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
						Region struct {
							StartLine int `json:"startLine"`
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	decodeJSON(t, out, &sarif)
	if sarif.Version != "2.1.0" || len(sarif.Runs) != 1 || len(sarif.Runs[0].Results) != 1 {
		t.Fatalf("sarif = %+v", sarif)
	}
	r := sarif.Runs[0].Results[0]
	if r.RuleID != "destructive-unconfirmed" || len(r.Suppressions) != 1 || r.Suppressions[0].Kind != "external" ||
		len(r.Locations) != 1 || r.Locations[0].PhysicalLocation.Region.StartLine != 1 || r.Locations[0].PhysicalLocation.ArtifactLocation.URI == "" {
		t.Errorf("result = %+v", r)
	}
}

// catalogsDir is testdata/catalogs at the repository root.
func catalogsDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "..", "..", "testdata", "catalogs")
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no catalogs in %s (testdata/catalogs at the repository root): %v", dir, err)
	}
	return dir
}

// TestLintCatalogs runs lint and docs over every shared catalog.
func TestLintCatalogs(t *testing.T) {
	t.Parallel()
	dir := catalogsDir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			code, out, errOut := runMain(t, "lint", f, "-severity", "info", "-format", "json")
			if code != exitOK && code != exitFailure {
				t.Fatalf("exit %d\n%s", code, errOut)
			}
			var doc lintDoc
			decodeJSON(t, out, &doc)
			if doc.Target.Kind != "catalog" || doc.Target.Tools == 0 {
				t.Errorf("target = %+v", doc.Target)
			}
			t.Logf("%d tools: %v", doc.Target.Tools, doc.Counts)
			if filepath.Base(f) == "github-all.json" {
				// The count: 24 write tools leave destructiveHint unset.
				n := 0
				for _, fd := range doc.Findings {
					if fd.Check == lint.CheckDestructiveImplicit {
						n++
					}
				}
				if n != 24 {
					t.Errorf("github-all: %d destructive-implicit findings, want 24", n)
				}
			}
			for _, format := range []string{"markdown", "html"} {
				code, out, errOut := runMain(t, "docs", f, "-format", format)
				if code != exitOK || !strings.Contains(out, "Safety table") {
					t.Errorf("docs -format %s: exit %d\n%s", format, code, errOut)
				}
			}
		})
	}
}

// TestLintGolden pins the text output, the JSON output, the checks list
// and the Markdown and HTML safety tables of a small catalog.
func TestLintGolden(t *testing.T) {
	t.Parallel()
	cat := filepath.Join("testdata", "lint-catalog.json")
	_, out, _ := runMain(t, "lint", cat, "-severity", "info")
	golden(t, "lint-catalog.golden", out)
	_, out, _ = runMain(t, "lint", "-list-checks")
	golden(t, "lint-checks.golden", out)
	_, out, _ = runMain(t, "help", "lint")
	golden(t, "lint-help.golden", out)
	_, out, _ = runMain(t, "docs", cat)
	golden(t, "docs-catalog.md.golden", out)
	_, out, _ = runMain(t, "help", "docs")
	golden(t, "docs-help.golden", out)
}

// countingCommand returns a command line that starts bin with args over
// stdio and appends a line to a file each time it starts, and a function
// that counts the starts.
func countingCommand(t *testing.T, bin string, args ...string) ([]string, func() int) {
	t.Helper()
	count := filepath.Join(t.TempDir(), "starts")
	script := `echo started >> "$0"; exec "$@"`
	cmd := append([]string{"sh", "-c", script, count, bin}, args...)
	return cmd, func() int {
		b, err := os.ReadFile(count)
		if err != nil {
			return 0
		}
		return strings.Count(string(b), "started\n")
	}
}

// disclosingFilesServer serves manage_files with progressive disclosure
// over streamable HTTP (both eras).
func disclosingFilesServer(t *testing.T) string {
	t.Helper()
	root, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	s, _ := filetool.NewDisclosingServer(root, nil, nil)
	ts := httptest.NewServer(endpoint.NewHandler(s, nil))
	t.Cleanup(ts.Close)
	return ts.URL + endpoint.Path
}

// TestLintDisclosed lints and documents examples/files with progressive
// disclosure, over HTTP and stdio in both eras: the full definitions are
// read from tool_descriptions, so manage_files is probed for its four
// actions with no resolve-failed finding (its minimal listing has an open
// schema), and a stdio server is started once per run.
func TestLintDisclosed(t *testing.T) {
	t.Parallel()
	url := disclosingFilesServer(t)
	bin := buildExample(t, "files")
	for _, era := range eras {
		for _, transport := range []string{"http", "stdio"} {
			t.Run(transport+"/"+era, func(t *testing.T) {
				server := []string{"-url", url}
				var starts func() int // nil over HTTP
				if transport == "stdio" {
					var cmd []string
					cmd, starts = countingCommand(t, bin, "-root", t.TempDir(), "-disclose")
					server = append([]string{"--"}, cmd...)
				}
				code, out, errOut := runMain(t, append([]string{"lint", "-era", era, "-severity", "info"}, server...)...)
				if code != exitOK || strings.Contains(out, lint.CheckResolveFailed) ||
					!strings.Contains(out, "4 argument variants probed, full definitions read from resource:///tool_descriptions") {
					t.Errorf("lint: exit %d\n%s%s", code, out, errOut)
				}
				if starts != nil && starts() != 1 {
					t.Errorf("lint started the server %d times, want 1", starts())
				}
				code, out, errOut = runMain(t, append([]string{"docs", "-era", era}, server...)...)
				if code != exitOK || !strings.Contains(out, "| `action=read` | 🟢 read-only |") || !strings.Contains(out, "| `action=delete` | 🔴 destructive |") {
					t.Errorf("docs: exit %d\n%s%s", code, out, errOut)
				}
				if starts != nil && starts() != 2 {
					t.Errorf("lint and docs started the server %d times, want 2", starts())
				}
			})
		}
	}
}
