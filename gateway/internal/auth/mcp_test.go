package auth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/endpoint"
)

// upstream is an MCP server the gateway forwards to; it records the
// credential headers each HTTP request brought.
type upstream struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []string // "Authorization: ..." and "Cookie: ..." lines
}

func newUpstream(t *testing.T) *upstream {
	up := &upstream{}
	server := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "v0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	h := endpoint.NewHandler(server, nil)
	up.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up.mu.Lock()
		for _, k := range []string{"Authorization", "Proxy-Authorization", "Cookie"} {
			for _, v := range r.Header.Values(k) {
				up.got = append(up.got, k+": "+v)
			}
		}
		up.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(up.srv.Close)
	return up
}

func (up *upstream) seen() []string {
	up.mu.Lock()
	defer up.mu.Unlock()
	return slices.Compact(slices.Sorted(slices.Values(up.got)))
}

// copyHeaders is a careless gateway core: it copies every header of the
// client's request into each upstream request.
type copyHeaders struct {
	from http.Header
	next http.RoundTripper
}

func (c copyHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range c.from {
		if r.Header.Get(k) == "" {
			r.Header[k] = vs
		}
	}
	return c.next.RoundTrip(r)
}

// who is what the gateway's whoami tool reports.
type who struct {
	Principal        string `json:"principal"`
	Method           Method `json:"method"`
	OK               bool   `json:"ok"`
	SawAuthorization bool   `json:"sawAuthorization"`
	Upstream         string `json:"upstream"`
}

// newMCPServer is a gateway's MCP server: whoami reads the principal with
// FromRequest and calls the upstream's echo through UpstreamTransport,
// copying the client's headers the way a careless core would.
func newMCPServer(up *upstream) *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: "gateway", Version: "v0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, who, error) {
		p, ok := FromRequest(ctx, req)
		w := who{Principal: p.String(), Method: p.Method, OK: ok}
		var inbound http.Header
		if req.Extra != nil && req.Extra.Header != nil {
			inbound = req.Extra.Header
			w.SawAuthorization = inbound.Get("Authorization") != ""
		}
		hc := &http.Client{Transport: copyHeaders{from: inbound, next: UpstreamTransport(nil, map[string]string{"X-Team": "a"}, "upstream-secret")}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "gateway-client", Version: "v0"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: up.srv.URL, HTTPClient: hc, MaxRetries: -1}, nil)
		if err != nil {
			return nil, w, err
		}
		defer cs.Close()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo"})
		if err != nil {
			return nil, w, err
		}
		w.Upstream = res.Content[0].(*mcp.TextContent).Text
		return nil, w, nil
	})
	return server
}

// clientHeaders is an MCP client's transport that sends a token and a
// cookie with every request.
type clientHeaders struct{ token string }

func (c clientHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if c.token != "" {
		r.Header.Set("Authorization", "Bearer "+c.token)
	}
	r.Header.Set("Cookie", "session=client-cookie")
	return http.DefaultTransport.RoundTrip(r)
}

// whoami connects an SDK client to url in the given era and calls whoami.
func whoami(t *testing.T, url, token, version string) (who, error) {
	t.Helper()
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v0"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: clientHeaders{token}}, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return who{}, err
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	if err != nil {
		return who{}, err
	}
	if res.IsError {
		t.Fatalf("whoami: %v", res.Content[0])
	}
	var w who
	data, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(data, &w); err != nil {
		t.Fatal(err)
	}
	return w, nil
}

// TestMCPPrincipal runs real MCP clients of both eras through the
// middleware: the tool handler gets the principal from FromRequest (the
// SDK's req.Extra.TokenInfo), never the client's token, and the upstream
// gets the upstream's own token and none of the client's credentials.
func TestMCPPrincipal(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	c, tokens := staticConfig(t, 2)
	is := newIssuer(t, key("ec"))
	c.OAuth = &OAuth{Issuer: is.srv.URL}

	newGW := func(c Options) *gateway {
		g := newGateway(t, c)
		mux := http.NewServeMux()
		g.a.Handle(mux)
		mux.Handle("/mcp", g.a.Middleware(endpoint.NewHandler(newMCPServer(up), nil)))
		g.srv.Config.Handler = mux
		return g
	}
	g := newGW(c)
	jwtToken := sign(t, key("ec"), is.claims(g.resource))

	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		for _, tc := range []struct {
			token  string
			want   string
			method Method
		}{
			{tokens[0], "p0", MethodToken},
			{tokens[1], "p1", MethodToken},
			{jwtToken, "alice", MethodOAuth},
		} {
			w, err := whoami(t, g.resource, tc.token, version)
			if err != nil {
				t.Fatalf("%s %s: %v", version, tc.want, err)
			}
			if w != (who{Principal: tc.want, Method: tc.method, OK: true, Upstream: "ok"}) {
				t.Errorf("%s %s: %+v", version, tc.want, w)
			}
		}
		if _, err := whoami(t, g.resource, "", version); err == nil {
			t.Errorf("%s: connected without a token", version)
		}
		if _, err := whoami(t, g.resource, "pft_wrong", version); err == nil {
			t.Errorf("%s: connected with a wrong token", version)
		}
	}
	if got := up.seen(); !slices.Equal(got, []string{"Authorization: Bearer upstream-secret"}) {
		t.Errorf("the upstream saw %q, want only its own token", got)
	}

	// Without authentication, on loopback: anonymous in both eras.
	anon := newGW(Options{})
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		w, err := whoami(t, anon.resource, "client-token", version)
		if err != nil {
			t.Fatal(err)
		}
		if w != (who{Principal: "anonymous", Method: MethodAnonymous, OK: true, Upstream: "ok"}) {
			t.Errorf("anonymous %s: %+v", version, w)
		}
	}
	if got := up.seen(); !slices.Equal(got, []string{"Authorization: Bearer upstream-secret"}) {
		t.Errorf("the upstream saw %q", got)
	}

	// An MCP endpoint mounted without the middleware has no principal,
	// not an anonymous one.
	bare := httptest.NewServer(endpoint.NewHandler(newMCPServer(up), nil))
	defer bare.Close()
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		w, err := whoami(t, bare.URL, tokens[0], version)
		if err != nil {
			t.Fatal(err)
		}
		if w.OK || w.Principal != "" {
			t.Errorf("no middleware, %s: %+v", version, w)
		}
	}

	// Over a connection that is not HTTP (stdio, in memory) the caller
	// is the user who started the gateway: anonymous.
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := newMCPServer(up).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	if err != nil {
		t.Fatal(err)
	}
	if m := res.StructuredContent.(map[string]any); m["ok"] != true || m["method"] != "anonymous" {
		t.Errorf("in memory: %v", m)
	}
}

// TestUpstreamTransport sends a request that carries a client's
// credentials through UpstreamTransport to a real server: none arrives,
// the upstream's own do, and the caller's request is left as it was.
func TestUpstreamTransport(t *testing.T) {
	t.Parallel()
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Header.Clone() }))
	defer srv.Close()

	send := func(headers map[string]string, token string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
		req.Header.Set("Authorization", "Bearer client-token")
		req.Header.Set("Proxy-Authorization", "Basic Y2xpZW50")
		req.Header.Add("Cookie", "session=client")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		resp, err := (&http.Client{Transport: UpstreamTransport(nil, headers, token)}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if req.Header.Get("Authorization") != "Bearer client-token" || req.Header.Get("Cookie") != "session=client" {
			t.Errorf("the caller's request was modified: %v", req.Header)
		}
	}

	send(map[string]string{"X-Team": "a"}, "upstream-secret")
	if got.Get("Authorization") != "Bearer upstream-secret" || len(got.Values("Authorization")) != 1 ||
		got.Get("Proxy-Authorization") != "" || got.Get("Cookie") != "" || got.Get("X-Team") != "a" || got.Get("Mcp-Protocol-Version") != "2026-07-28" {
		t.Errorf("with an upstream token: %v", got)
	}
	send(nil, "")
	if got.Get("Authorization") != "" || got.Get("Proxy-Authorization") != "" || got.Get("Cookie") != "" {
		t.Errorf("without an upstream token: %v", got)
	}
	// Credentials the config gives the upstream are its own, and are sent.
	send(map[string]string{"Authorization": "Basic dXBzdHJlYW0=", "Cookie": "upstream=1"}, "")
	if got.Get("Authorization") != "Basic dXBzdHJlYW0=" || got.Get("Cookie") != "upstream=1" {
		t.Errorf("configured credentials: %v", got)
	}

	h := http.Header{"Authorization": {"a"}, "Cookie": {"c"}, "Proxy-Authorization": {"p"}, "Accept": {"x"}}
	StripCredentials(h)
	if len(h) != 1 || h.Get("Accept") != "x" {
		t.Errorf("StripCredentials left %v", h)
	}
}
