//go:build integration

package interop

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/preflightmcp/preflight/interop/internal/fixture"
)

var toolResolution = map[string]any{fixture.ToolResolutionExt: map[string]any{}}

// eraRouter sends 2026-07-28 (and later) requests to the stateless handler
// and everything else, the legacy handshake included, to the stateful one.
type eraRouter struct {
	modern, legacy         http.Handler
	modernHits, legacyHits atomic.Int64
}

func (r *eraRouter) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Header.Get("MCP-Protocol-Version") >= "2026-07-28" {
		r.modernHits.Add(1)
		r.modern.ServeHTTP(w, req)
		return
	}
	r.legacyHits.Add(1)
	r.legacy.ServeHTTP(w, req)
}

type observation struct {
	version    string
	extensions map[string]any
}

// httpFixture is the fixture server behind an era router on /mcp.
type httpFixture struct {
	url    string
	router *eraRouter

	mu   sync.Mutex
	seen []observation
}

func (f *httpFixture) observations() []observation {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]observation(nil), f.seen...)
}

// startHTTP serves the fixture over HTTP until the test ends, then checks
// that no goroutine outlived the server.
func startHTTP(t *testing.T) *httpFixture {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) }) // runs last
	f := &httpFixture{}
	s := fixture.NewServer(func(version string, exts map[string]any) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.seen = append(f.seen, observation{version, exts})
	})
	get := func(*http.Request) *mcp.Server { return s }
	f.router = &eraRouter{
		modern: mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true}),
		legacy: mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: false}),
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", f.router)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	f.url = srv.URL + "/mcp"
	return f
}

// standardSteps exercise list, call, a raw custom request and two errors.
func standardSteps() []Step {
	return []Step{
		Info(),
		List(),
		Call("echo", map[string]any{"text": "hello"}),
		Request("tools/resolve", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hello"}}),
		Request("tools/resolve", map[string]any{"name": "nope", "arguments": map[string]any{}}),
		Request("nope/nope", map[string]any{}),
	}
}

// checkStandard checks a report of standardSteps.
func checkStandard(t *testing.T, rep Report, wantVersion, wantEra string, wantExts map[string]any) {
	t.Helper()
	if rep.ProtocolVersion != wantVersion || rep.Era != wantEra {
		t.Errorf("negotiated %q (%s), want %q (%s)", rep.ProtocolVersion, rep.Era, wantVersion, wantEra)
	}
	if got := rep.ServerCapabilities["extensions"]; !reflect.DeepEqual(got, toolResolution) {
		t.Errorf("server capabilities extensions = %v, want %v", got, toolResolution)
	}
	if rep.ServerInfo["name"] != "preflight-interop-fixture" {
		t.Errorf("server info = %v", rep.ServerInfo)
	}
	for i, r := range rep.Results[:4] {
		if !r.OK {
			t.Fatalf("step %d (%s) failed: %v", i, r.Op, r.Error)
		}
	}

	info := rep.Results[0].Map()
	if info["protocolVersion"] != wantVersion {
		t.Errorf("info protocolVersion = %v, want %s", info["protocolVersion"], wantVersion)
	}

	var list struct {
		Tools []struct {
			Name        string          `json:"name"`
			Annotations map[string]bool `json:"annotations"`
			Meta        map[string]any  `json:"_meta"`
		} `json:"tools"`
	}
	if err := rep.Results[1].Decode(&list); err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != 1 || list.Tools[0].Name != "echo" {
		t.Fatalf("tools/list = %s", rep.Results[1].Result)
	}
	if got := list.Tools[0].Meta[fixture.ToolResolutionExt]; !reflect.DeepEqual(got, map[string]any{"resolvable": true}) {
		t.Errorf("echo _meta[%s] = %v", fixture.ToolResolutionExt, got)
	}
	if !list.Tools[0].Annotations["readOnlyHint"] {
		t.Errorf("echo annotations = %v", list.Tools[0].Annotations)
	}

	var call struct {
		IsError           bool              `json:"isError"`
		StructuredContent map[string]string `json:"structuredContent"`
	}
	if err := rep.Results[2].Decode(&call); err != nil {
		t.Fatal(err)
	}
	if call.IsError || call.StructuredContent["echo"] != "hello" {
		t.Errorf("tools/call echo = %s", rep.Results[2].Result)
	}

	resolved := rep.Results[3].Map()
	if resolved["name"] != "echo" {
		t.Errorf("tools/resolve name = %v", resolved["name"])
	}
	wantAnn := map[string]any{"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}
	if !reflect.DeepEqual(resolved["annotations"], wantAnn) {
		t.Errorf("tools/resolve annotations = %v, want %v", resolved["annotations"], wantAnn)
	}
	if tool, _ := resolved["tool"].(map[string]any); tool["name"] != "echo" || tool["inputSchema"] == nil {
		t.Errorf("tools/resolve tool = %v", resolved["tool"])
	}
	if got := resolved["x-preflight-unknown"]; !reflect.DeepEqual(got, map[string]any{"kept": []any{"yes"}}) {
		t.Errorf("unknown result field = %v", got)
	}
	meta, _ := resolved["_meta"].(map[string]any)
	if meta[fixture.MarkerKey] != "resolved:hello" {
		t.Errorf("tools/resolve _meta = %v", meta)
	}
	if !reflect.DeepEqual(meta[fixture.ToolResolutionExt], map[string]any{"resolvable": true}) {
		t.Errorf("tools/resolve _meta[%s] = %v", fixture.ToolResolutionExt, meta[fixture.ToolResolutionExt])
	}
	if wantExts == nil {
		wantExts = map[string]any{}
	}
	if got := meta[fixture.SeenExtensionsKey]; !reflect.DeepEqual(got, wantExts) {
		t.Errorf("server saw client extensions %v, want %v", got, wantExts)
	}
	// The SDK drops resultType even from a raw request; the wire has it.
	if _, ok := resolved["resultType"]; ok {
		t.Errorf("resultType survived the client: %v", resolved)
	}
	if rt := rep.Results[3].WireResult()["resultType"]; rt != "complete" {
		t.Errorf("wire resultType = %v, want complete", rt)
	}

	checkError(t, rep.Results[4], -32602, `unknown tool "nope"`)
	checkUnknownMethod(t, rep.Results[5], wantEra)
}

// checkUnknownMethod checks the answer to a method the server lacks. Over
// stdio that is a JSON-RPC -32601. Over HTTP the Go SDK answers a 2026-07-28
// request with HTTP 404 and a JSON-RPC -32601 body, which the TypeScript
// client surfaces as an SdkHttpError (the harness recovers the code from the
// body); a legacy request gets HTTP 400 with a plain-text body and no
// JSON-RPC error at all.
func checkUnknownMethod(t *testing.T, r StepResult, era string) {
	t.Helper()
	if r.OK || r.Error == nil {
		t.Errorf("%s: got success %s, want an error", r.Op, r.Result)
		return
	}
	e := r.Error
	switch {
	case e.HTTPStatus == 0:
		checkError(t, r, -32601, "nope/nope")
	case era == "modern":
		if e.HTTPStatus != http.StatusNotFound || e.Code != -32601 || !strings.Contains(e.Message, "nope/nope") {
			t.Errorf("unknown method over HTTP, 2026-07-28: %v, want HTTP 404 with -32601", e)
		}
	default:
		if e.HTTPStatus != http.StatusBadRequest && e.Code != -32601 {
			t.Errorf("unknown method over HTTP, legacy: %v, want HTTP 400 or -32601", e)
		}
	}
}

func checkError(t *testing.T, r StepResult, code int, msg string) {
	t.Helper()
	if r.OK || r.Error == nil {
		t.Errorf("%s: got success %s, want error %d", r.Op, r.Result, code)
		return
	}
	if r.Error.Code != code || !strings.Contains(r.Error.Message, msg) {
		t.Errorf("%s: error %v, want code %d with %q", r.Op, r.Error, code, msg)
	}
}

func TestHTTP(t *testing.T) {
	tests := []struct {
		name        string
		era         string
		exts        map[string]any
		wantVersion string
		wantEra     string
	}{
		{"modern/extension", EraModern, toolResolution, "2026-07-28", "modern"},
		{"modern/no-extension", EraModern, nil, "2026-07-28", "modern"},
		{"legacy/extension", EraLegacy, toolResolution, "2025-11-25", "legacy"},
		{"legacy/no-extension", EraLegacy, nil, "2025-11-25", "legacy"},
		{"auto/extension", EraAuto, toolResolution, "2026-07-28", "modern"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := startHTTP(t)
			rep := RunTS(t, Plan{
				Transport:  Transport{HTTP: f.url},
				Era:        tt.era,
				Extensions: tt.exts,
				Wire:       true,
				Steps:      standardSteps(),
			})
			checkStandard(t, rep, tt.wantVersion, tt.wantEra, tt.exts)

			// Both tools/resolve requests reached the handler, in the
			// negotiated era, with exactly the declared extensions.
			obs := f.observations()
			if len(obs) != 2 {
				t.Fatalf("server saw %d tools/resolve requests, want 2", len(obs))
			}
			for _, o := range obs {
				if o.version != tt.wantVersion {
					t.Errorf("server saw protocol version %q, want %q", o.version, tt.wantVersion)
				}
				_, has := o.extensions[fixture.ToolResolutionExt]
				if has != (tt.exts != nil) {
					t.Errorf("server saw client extensions %v, declared %v", o.extensions, tt.exts)
				}
			}

			// The router sent each era to its handler only.
			modern, legacy := f.router.modernHits.Load(), f.router.legacyHits.Load()
			switch tt.era {
			case EraModern:
				if modern == 0 || legacy != 0 {
					t.Errorf("router hits: modern %d, legacy %d", modern, legacy)
				}
			case EraLegacy:
				if modern != 0 || legacy == 0 {
					t.Errorf("router hits: modern %d, legacy %d", modern, legacy)
				}
			}
		})
	}
}

// buildStdioServer builds testdata/stdioserver into a temporary directory.
func buildStdioServer(t *testing.T) string {
	t.Helper()
	gobin := "go" // go test puts its own go first on PATH
	bin := filepath.Join(t.TempDir(), "stdioserver")
	out, err := exec.Command(gobin, "build", "-o", bin, "./testdata/stdioserver").CombinedOutput()
	if err != nil {
		t.Fatalf("go build ./testdata/stdioserver: %v\n%s", err, out)
	}
	return bin
}

func TestStdio(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	bin := buildStdioServer(t)
	tests := []struct {
		name        string
		era         string
		exts        map[string]any
		wantVersion string
		wantEra     string
	}{
		{"modern", EraModern, toolResolution, "2026-07-28", "modern"},
		{"legacy", EraLegacy, toolResolution, "2025-11-25", "legacy"},
		{"legacy/no-extension", EraLegacy, nil, "2025-11-25", "legacy"},
		{"auto", EraAuto, nil, "2026-07-28", "modern"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := RunTS(t, Plan{
				Transport:  Transport{Stdio: &Stdio{Command: bin}},
				Era:        tt.era,
				Extensions: tt.exts,
				Wire:       true,
				Steps:      standardSteps(),
			})
			checkStandard(t, rep, tt.wantVersion, tt.wantEra, tt.exts)
		})
	}
}

// fatalTB records a Fatal instead of failing the real test.
type fatalTB struct {
	testing.TB
	mu    sync.Mutex
	fatal string
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.fatal = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *fatalTB) Fatal(args ...any) { f.Fatalf("%s", fmt.Sprint(args...)) }

// A server that cannot be reached is a harness failure, not a step error.
func TestUnreachableIsFatal(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/mcp"
	srv.Close()

	ft := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		RunTS(ft, Plan{Transport: Transport{HTTP: url}, Era: EraModern, TimeoutMS: 5000, Steps: []Step{List()}})
	}()
	<-done
	if !strings.Contains(ft.fatal, "connect failed") {
		t.Errorf("RunTS on an unreachable server: fatal = %q, want a connect failure", ft.fatal)
	}
	goleak.VerifyNone(t)
}
