package oauthas

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/preflightmcp/preflight/endpoint"
)

// Resource is a running MCP server that a token of the AS must reach.
type Resource struct {
	// URL is its MCP endpoint.
	URL string

	calls   atomic.Int64 // whoami calls
	refused atomic.Int64 // requests refused for their token
}

// Identity is whoami's answer.
type Identity struct {
	Subject string   `json:"subject"`
	Scopes  []string `json:"scopes"`
}

// ResourceOptions configure a Resource; nil means the defaults.
type ResourceOptions struct {
	// Legacy serves 2025-11-25 only, with sessions (the go-sdk's handler,
	// which binds a session to the user whose token made it), instead of
	// both eras on one URL.
	Legacy bool
}

// StartResource serves the whoami server, protected by as, on loopback
// until the test ends.
func StartResource(t testing.TB, as *AS, opts *ResourceOptions) *Resource {
	t.Helper()
	r := &Resource{}
	s := mcp.NewServer(&mcp.Implementation{Name: "whoami", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "whoami", Description: "Says whose token the call carries."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, Identity, error) {
			r.calls.Add(1)
			ti := req.Extra.TokenInfo
			if ti == nil {
				return nil, Identity{}, fmt.Errorf("no token")
			}
			id := Identity{Subject: ti.UserID, Scopes: ti.Scopes}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{
				Text: "subject=" + id.Subject + " scopes=" + strings.Join(id.Scopes, " ")}}}, id, nil
		})
	// A resource that is the account's own: a gateway in front of the
	// server for each principal must not show one principal's to another.
	s.AddResource(&mcp.Resource{URI: "whoami://notes", Name: "notes", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			sub := ""
			if ti := req.Extra.TokenInfo; ti != nil {
				sub = ti.UserID
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "whoami://notes", MIMEType: "text/plain", Text: sub + "'s notes"}}}, nil
		})
	t.Cleanup(func() {
		for ss := range s.Sessions() {
			ss.Close()
		}
	})
	ln := listen(t)
	base := "http://" + ln.Addr().String()
	r.URL = base + endpoint.Path
	prm := auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: r.URL, AuthorizationServers: []string{as.URL}, ScopesSupported: []string{Scope}, BearerMethodsSupported: []string{"header"},
	})
	guard := auth.RequireBearerToken(func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		sub, scopes, exp, err := as.introspect(ctx, token)
		if err != nil {
			r.refused.Add(1)
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		return &auth.TokenInfo{UserID: sub, Scopes: scopes, Expiration: exp}, nil
	}, &auth.RequireBearerTokenOptions{Scopes: []string{Scope}, ResourceMetadataURL: base + "/.well-known/oauth-protected-resource" + endpoint.Path})
	mux := http.NewServeMux()
	mux.Handle("/.well-known/oauth-protected-resource"+endpoint.Path, prm)
	var h http.Handler = endpoint.NewHandler(s, nil)
	if opts != nil && opts.Legacy {
		h = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	}
	mux.Handle(endpoint.Path, guard(h))
	serveOn(t, ln, mux)
	return r
}

// Calls returns how many whoami calls the server answered.
func (r *Resource) Calls() int { return int(r.calls.Load()) }

// Refused returns how many requests were refused for their token.
func (r *Resource) Refused() int { return int(r.refused.Load()) }

// listen listens on a free loopback port.
func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// serveOn serves h on ln until the test ends.
func serveOn(t testing.TB, ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
		}
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("oauthas: %v", err)
		}
	})
}
