package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioServerEnv, set, makes the test binary a stdio upstream (TestMain).
const stdioServerEnv = "PREFLIGHT_UPSTREAM_TEST_STDIO"

// rawStructured is a result member whose bytes the SDK's decoding does
// not keep (1.50 becomes 1.5).
const rawStructured = `{"n":1.50,"flags":[true,false]}`

// fullServer is newServer with the tools raw (a result whose exact bytes
// matter) and exit (the process ends, over stdio).
func fullServer() *mcp.Server {
	s := newServer(nil)
	s.AddTool(&mcp.Tool{Name: "raw", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		r := textResult("raw")
		r.StructuredContent = json.RawMessage(rawStructured)
		return r, nil
	})
	s.AddTool(&mcp.Tool{Name: "exit", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		os.Exit(3)
		return nil, nil
	})
	return s
}

// serveStdio serves fullServer on stdin and stdout until stdin closes.
func serveStdio() {
	fmt.Fprintln(os.Stderr, "test server starting")
	if err := fullServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}

// wantRaw checks that the raw tool's result reaches the caller byte for
// byte.
func wantRaw(t *testing.T, r *rig) {
	t.Helper()
	step, err := r.call(t.Context(), "raw", `{}`)
	if err != nil || step.Result == nil {
		t.Fatalf("raw = %+v, %v", step, err)
	}
	if !strings.Contains(string(step.Result.Raw), `"structuredContent":`+rawStructured) {
		t.Errorf("result %s, want the upstream's bytes %s", step.Result.Raw, rawStructured)
	}
}

// TestStdio: a stdio upstream is started, spoken to, captured raw, its
// stderr kept; when its process dies the call in flight fails as such and
// the process is started again.
func TestStdio(t *testing.T) {
	t.Parallel()
	r := run(t, Spec{Name: "up", Command: os.Args[0], Env: map[string]string{stdioServerEnv: "1"},
		Restart: Restart{Initial: time.Millisecond}}, nil)
	h := r.up()
	if h.Transport != TransportStdio || h.Era != EraModern || h.Tools != 3 {
		t.Errorf("health %+v", h)
	}
	if !slices.Contains(h.Stderr, "test server starting") {
		t.Errorf("stderr tail %q, want the server's line", h.Stderr)
	}
	wantRaw(t, r)

	_, err := r.call(t.Context(), "exit", `{}`)
	var te *TransientError
	if !errors.As(err, &te) || te.Kind != FailExited || !te.Sent {
		t.Fatalf("call of a dying server = %v, want a transient exit after sending", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), bound)
	defer cancel()
	if err := r.c.Recover(ctx, err); err != nil {
		t.Fatalf("Recover = %v", err)
	}
	if step, err := r.call(t.Context(), "echo", `{"again":true}`); err != nil || resultText(t, step) != `{"again":true}` {
		t.Errorf("echo after the restart = %+v, %v", step, err)
	}
	if h := r.waitFor("restarted", func(h Health) bool { return h.State == StateUp && h.Restarts == 1 }); len(h.Stderr) < 2 {
		t.Errorf("stderr tail %q, want the lines of both processes", h.Stderr)
	}
}

// httpUpstream serves fullServer over streamable HTTP (stateless for a
// 2026-07-28 upstream, as the SDK requires), records the headers of its
// requests, and answers 503 while failing is set.
type httpUpstream struct {
	*httptest.Server
	failing atomic.Bool

	mu      sync.Mutex
	headers []http.Header
}

func newHTTPUpstream(t *testing.T, era string) *httpUpstream {
	s := fullServer()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: era == EraModern})
	u := &httpUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.headers = append(u.headers, r.Header.Clone())
		u.mu.Unlock()
		if r.Method == http.MethodPost && u.failing.Load() {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(u.Close)
	return u
}

// TestHTTP: a streamable HTTP upstream gets the configured headers and
// token, its results are captured raw, and a 5xx is a transient failure
// that may be retried at once.
func TestHTTP(t *testing.T) {
	t.Setenv("PREFLIGHT_TEST_UPSTREAM_TOKEN", " s3cret \n")
	for _, era := range []string{EraLegacy, EraModern} {
		t.Run(era, func(t *testing.T) {
			u := newHTTPUpstream(t, era)
			r := run(t, Spec{Name: "up", URL: u.URL, Era: era, Headers: map[string]string{"X-Team": "blue"},
				BearerTokenEnv: "PREFLIGHT_TEST_UPSTREAM_TOKEN"}, nil)
			if h := r.up(); h.Transport != TransportHTTP || h.Era != era {
				t.Errorf("health %+v", h)
			}
			wantRaw(t, r)
			u.mu.Lock()
			for _, h := range u.headers {
				if h.Get("Authorization") != "Bearer s3cret" || h.Get("X-Team") != "blue" {
					t.Errorf("request headers %v, want the token and X-Team", h)
					break
				}
			}
			u.mu.Unlock()

			u.failing.Store(true)
			_, err := r.call(t.Context(), "echo", `{}`)
			var te *TransientError
			if !errors.As(err, &te) || te.Kind != FailHTTP5xx || te.Status != http.StatusServiceUnavailable || !te.Sent {
				t.Fatalf("call answered 503 = %v, want a transient HTTP 5xx", err)
			}
			if err := r.c.Recover(t.Context(), err); err != nil {
				t.Errorf("Recover after a 5xx = %v, want at once", err)
			}
			u.failing.Store(false)
			if step, err := r.call(t.Context(), "echo", `{}`); err != nil || resultText(t, step) != `{}` {
				t.Errorf("echo after the 5xx = %+v, %v", step, err)
			}
		})
	}
}

// TestBearerTokenMissing: an upstream whose token variable is not set is
// down with an error that names the variable, and no request is sent.
func TestBearerTokenMissing(t *testing.T) {
	t.Parallel()
	u := newHTTPUpstream(t, EraLegacy)
	r := run(t, Spec{Name: "up", URL: u.URL, BearerTokenEnv: "PREFLIGHT_TEST_UNSET_TOKEN"}, nil)
	h := r.waitFor("down", func(h Health) bool { return h.State == StateDown })
	if !strings.Contains(h.LastError, "PREFLIGHT_TEST_UNSET_TOKEN is not set") {
		t.Errorf("last error %q", h.LastError)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.headers) != 0 {
		t.Errorf("%d requests sent without the token", len(u.headers))
	}
}

// TestInMemoryRaw: results over a custom transport are captured raw too.
func TestInMemoryRaw(t *testing.T) {
	t.Parallel()
	m := &memServer{s: fullServer()}
	r := run(t, Spec{Name: "up", Connect: m.connect}, nil)
	r.up()
	wantRaw(t, r)
}
