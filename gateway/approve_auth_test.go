package gateway_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/gateway/internal/auth"
	"github.com/preflightmcp/preflight/gateway/internal/page"
)

// bearer adds a client's token to every request it sends.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connectAs connects a Go SDK client (no elicitation) at version that
// presents token.
func connectAs(t *testing.T, url, version, token string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "auth-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token}}},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callDelete calls the delete of path and returns the tool result's text
// and whether it was a tool error.
func callDelete(t *testing.T, cs *mcp.ClientSession, path string) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "manage_files", Arguments: map[string]any{"action": "delete", "path": path}})
	if err != nil {
		t.Fatal(err)
	}
	return contentText(t, res), res.IsError
}

// staticTokens returns an authenticator of static tokens for principals,
// and each principal's token.
func staticTokens(t *testing.T, principals ...string) (*auth.Authenticator, map[string]string) {
	t.Helper()
	var c auth.Options
	tokens := map[string]string{}
	for _, p := range principals {
		tok, entry, err := auth.NewToken(p)
		if err != nil {
			t.Fatal(err)
		}
		tokens[p] = tok
		c.Tokens = append(c.Tokens, entry)
	}
	a, err := auth.New(&c)
	if err != nil {
		t.Fatal(err)
	}
	return a, tokens
}

// TestApprovalBoundToPrincipal: with static tokens, the request of
// alice's call is alice's (in both eras: the passthrough path and the
// SDK's); bob, signed in to the page, neither sees nor approves it, and
// his own identical call is another request; alice's approval runs
// alice's retry only. A client without a token is refused.
func TestApprovalBoundToPrincipal(t *testing.T) {
	a, tokens := staticTokens(t, "alice", "bob")
	ag := newApprovalGateway(t, approvalSetup{auth: a, identity: &page.Identity{Principal: "bob", Name: "Bob"}})

	resp, err := http.Post(ag.url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a call without a token: %d", resp.StatusCode)
	}

	for _, era := range []string{modern, legacy} {
		t.Run(era, func(t *testing.T) {
			alice, bob := connectAs(t, ag.url, era, tokens["alice"]), connectAs(t, ag.url, era, tokens["bob"])
			path := "full/inner/x.txt"
			if era == legacy {
				path = "notes.txt"
			}
			calls := ag.up.toolCalls()
			msg, isErr := callDelete(t, alice, path)
			if !isErr {
				t.Fatalf("alice's delete ran unapproved: %q", msg)
			}
			id := pendingLink(t, msg)
			r, err := ag.approvals.Get(t.Context(), id, "alice")
			if err != nil || r.Principal != "alice" {
				t.Fatalf("alice's request: %+v %v", r, err)
			}

			// Bob signs in to the page with his login link.
			pc := newPageClient(t, ag.base)
			link, err := ag.login.NewLink(ag.g.PageURL())
			if err != nil {
				t.Fatal(err)
			}
			csrf := pc.signIn(link)
			if st, body := pc.do(http.MethodGet, "/ui/approvals/"+id, nil); st != http.StatusNotFound || strings.Contains(body, path) {
				t.Errorf("bob opens alice's request: %d", st)
			}
			if st, _ := pc.do(http.MethodPost, "/ui/approvals/"+id+"/approve", url.Values{"csrf": {csrf}}); st != http.StatusNotFound {
				t.Errorf("bob approves alice's request: %d", st)
			}
			if _, err := ag.approvals.Approve(t.Context(), id, approval.Approver{Principal: "bob"}); err == nil {
				t.Error("the service let bob approve alice's call")
			}
			if r, _ := ag.approvals.Get(t.Context(), id, "alice"); r.State != approval.Pending {
				t.Fatalf("alice's request after bob's attempts: %s", r.State)
			}
			// Bob's identical call is his own request; on the page he
			// approves his, which does not run alice's.
			msg, _ = callDelete(t, bob, path)
			bobs := pendingLink(t, msg)
			if bobs == id {
				t.Fatal("bob's call took alice's request")
			}
			if st, body := pc.do(http.MethodPost, "/ui/approvals/"+bobs+"/approve", url.Values{"csrf": {csrf}}); st != http.StatusSeeOther && st != http.StatusOK {
				t.Fatalf("bob approves his own call: %d %s", st, body)
			}
			if msg, isErr := callDelete(t, alice, path); !isErr || pendingLink(t, msg) != id || ag.up.toolCalls() != calls {
				t.Fatalf("bob's approval ran alice's call: %q", msg)
			}
			// Alice approves hers (as she would on the page), and her retry
			// runs; then bob's runs (the file is already gone by then).
			if _, err := ag.approvals.Approve(t.Context(), id, approval.Approver{Principal: "alice"}); err != nil {
				t.Fatal(err)
			}
			if msg, isErr := callDelete(t, alice, path); isErr || !strings.Contains(msg, "deleted: "+path) {
				t.Fatalf("alice's approved retry: %q", msg)
			}
			if msg, isErr := callDelete(t, bob, path); isErr || ag.up.toolCalls() != calls+2 {
				t.Fatalf("bob's approved retry: %q", msg)
			}
			if r, _ := ag.approvals.Get(t.Context(), id, "alice"); r.State != approval.Used || r.DecidedBy.Principal != "alice" {
				t.Errorf("alice's request at the end: %+v", r)
			}
		})
	}
}

// issuer is an OAuth authorization server's keys: one EC key, served as a
// JWKS over HTTP on loopback.
type issuer struct {
	srv *httptest.Server
	key *ecdsa.PrivateKey
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	is := &issuer{key: k}
	b, err := k.PublicKey.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	jwks, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{
		"kty": "EC", "crv": "P-256", "kid": "ec-1", "use": "sig", "alg": "ES256", "x": enc(b[1:33]), "y": enc(b[33:]),
	}}})
	is.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(jwks)
	}))
	t.Cleanup(is.srv.Close)
	return is
}

func (is *issuer) token(t *testing.T, sub, aud string) string {
	t.Helper()
	now := time.Now()
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"iss": is.srv.URL, "sub": sub, "aud": aud, "iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	})
	tok.Header["kid"] = "ec-1"
	s, err := tok.SignedString(is.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestApprovalOAuthPrincipal: a JWT of the configured issuer names the
// principal (its sub) that the approval request is bound to; a token for
// another resource is refused before any call.
func TestApprovalOAuthPrincipal(t *testing.T) {
	is := newIssuer(t)
	const resource = "http://127.0.0.1/mcp"
	a, err := auth.New(&auth.Options{OAuth: &auth.OAuth{Issuer: is.srv.URL, Resource: resource, JWKSURL: is.srv.URL + "/jwks",
		Algorithms: []string{"ES256"}}, HTTPClient: is.srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	ag := newApprovalGateway(t, approvalSetup{auth: a})
	// The protected-resource metadata is served beside /mcp.
	resp, err := http.Get(ag.base + auth.WellKnownPath + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || meta["resource"] != resource {
		t.Fatalf("protected-resource metadata: %d %v", resp.StatusCode, meta)
	}

	for _, era := range []string{modern, legacy} {
		t.Run(era, func(t *testing.T) {
			cs := connectAs(t, ag.url, era, is.token(t, "carol", resource))
			path := map[string]string{modern: "notes.txt", legacy: "full/inner/x.txt"}[era]
			msg, isErr := callDelete(t, cs, path)
			if !isErr {
				t.Fatalf("unapproved delete ran: %q", msg)
			}
			id := pendingLink(t, msg)
			r, err := ag.approvals.Get(t.Context(), id, "carol")
			if err != nil || r.Principal != "carol" {
				t.Fatalf("the request of carol's call: %+v %v", r, err)
			}
			if _, err := ag.approvals.Approve(t.Context(), id, approval.Approver{Principal: "carol"}); err != nil {
				t.Fatal(err)
			}
			if msg, isErr := callDelete(t, cs, path); isErr || ag.up.exists(path) {
				t.Fatalf("carol's approved retry: %q", msg)
			}
		})
	}
	other := &http.Client{Transport: bearer{is.token(t, "carol", "https://elsewhere.example/mcp")}}
	resp, err = other.Post(ag.url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "invalid_token") {
		t.Errorf("a token for another resource: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
}

// TestClientTokenNeverReachesUpstream: an authenticated client's calls in
// both eras (the passthrough path and the SDK's) reach the HTTP upstream
// with the upstream's own token from the environment, never the client's.
func TestClientTokenNeverReachesUpstream(t *testing.T) {
	a, tokens := staticTokens(t, "alice")
	ag := newApprovalGateway(t, approvalSetup{auth: a, bearer: "upstream-secret"})
	for _, era := range []string{modern, legacy} {
		cs := connectAs(t, ag.url, era, tokens["alice"])
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "manage_files", Arguments: map[string]any{"action": "read", "path": "notes.txt"}})
		if err != nil || res.IsError {
			t.Fatalf("%s read: %v %+v", era, err, res)
		}
	}
	seen := ag.up.authorizations()
	if len(seen) == 0 || ag.up.toolCalls() != 2 {
		t.Fatalf("the upstream saw %d calls and Authorization %q", ag.up.toolCalls(), seen)
	}
	for _, v := range seen {
		if v != "Bearer upstream-secret" || strings.Contains(v, tokens["alice"]) {
			t.Errorf("the upstream got Authorization %q", v)
		}
	}
}
