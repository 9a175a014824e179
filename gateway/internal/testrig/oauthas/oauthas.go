// Package oauthas gives tests a real OAuth 2.1 authorization server, the
// program in the repository's oauthas module (built on fosite, in a module
// of its own so that fosite stays out of the gateway's build list), and
// an MCP server it protects.
//
// The authorization server grants the authorization code with PKCE S256
// (required), refresh tokens (rotated on each use) and revocation (RFC
// 7009) to two pre-registered clients, [PublicClient] and
// [ConfidentialClient], whose redirect URIs are any loopback port at
// [RedirectPath]. Its RFC 8414 metadata is at
// /.well-known/oauth-authorization-server. The authorize endpoint grants at
// once to the person whose browser carries the [UserCookie] (set with
// [AS.LogIn]) and refuses a browser without it. It counts the refresh grants
// of each subject and records the resource indicator of each authorization,
// which tests read, as they set lifespans and revoke grants, at its
// control endpoints under /test/.
//
// The program is built once per version of its sources (a hash of its
// go.mod, go.sum and Go files) into the user's cache directory, with
// GOWORK=off, and started for each [Start].
//
// [StartResource] serves an MCP server behind the go-sdk's
// auth.RequireBearerToken, checking each token by introspection (RFC 7662)
// at the authorization server, with its protected-resource metadata (RFC
// 9728) and one tool, whoami, which answers with the token's subject and
// scopes.
package oauthas

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The pre-registered clients.
const (
	PublicClient       = "preflight-public"
	ConfidentialClient = "preflight-confidential"
	ConfidentialSecret = "confidential-client-secret"
)

// The resource server's client, which may only introspect.
const (
	resourceClient = "preflight-resource"
	resourceSecret = "resource-server-secret"
)

// RedirectPath is the path of the clients' redirect URI, on any loopback
// port (RFC 8252): the gateway's page at /ui.
const RedirectPath = "/ui/connections/callback"

// Scope is the scope the protected server asks for; offline_access is
// offered too.
const Scope = "mcp:tools"

// UserCookie names the cookie that says who logs in at the authorize
// endpoint.
const UserCookie = "oauthas_user"

// Bounds, not synchronisation: how long the program may take to say its
// URL, and a call of its control endpoints or introspection.
const (
	startTimeout = time.Minute
	callTimeout  = 30 * time.Second
)

// AS is a running authorization server. Its methods that take no context
// fail the test on error, so they belong on the test's goroutine.
type AS struct {
	// URL is its issuer, http://127.0.0.1:PORT.
	URL string

	t      testing.TB
	client *http.Client
}

// Start runs an authorization server on loopback until the test ends.
// Its access tokens live an hour until [AS.SetAccessTTL].
func Start(t testing.TB) *AS {
	t.Helper()
	bin := Binary(t)
	stdout, stderr := newOutput(), newOutput()
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0")
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("oauthas: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	a := &AS{t: t, client: &http.Client{Transport: &http.Transport{}, Timeout: callTimeout}}
	t.Cleanup(func() {
		a.client.CloseIdleConnections()
		_ = cmd.Process.Kill()
		<-exited
	})
	select {
	case line := <-stdout.firstLine:
		a.URL = strings.TrimSpace(line)
	case err := <-exited:
		exited <- err
		t.Fatalf("oauthas: the server exited: %v\n%s", err, stderr)
	case <-time.After(startTimeout):
		t.Fatalf("oauthas: the server did not say its URL within %s\n%s", startTimeout, stderr)
	}
	if !strings.HasPrefix(a.URL, "http://127.0.0.1:") {
		t.Fatalf("oauthas: the server said %q, not its URL\n%s", a.URL, stderr)
	}
	return a
}

// SetAccessTTL sets the lifespans of the access tokens granted from now
// on: those exchanged for a code, and those of a refresh. A short first
// one makes a refresh due without waiting for it.
func (a *AS) SetAccessTTL(fromCode, fromRefresh time.Duration) {
	a.t.Helper()
	form := url.Values{"from_code": {fromCode.String()}, "from_refresh": {fromRefresh.String()}}
	if err := a.post(context.Background(), "/test/access-ttl", form); err != nil {
		a.t.Fatal(err)
	}
}

// LogIn makes the browser whose cookies jar keeps log in as subject.
func (a *AS) LogIn(jar http.CookieJar, subject string) {
	u, _ := url.Parse(a.URL)
	jar.SetCookies(u, []*http.Cookie{{Name: UserCookie, Value: subject, Path: "/"}})
}

// Refreshes returns how many refresh grants subject has had.
func (a *AS) Refreshes(subject string) int {
	a.t.Helper()
	var counts map[string]int
	if err := a.get("/test/refreshes", &counts); err != nil {
		a.t.Fatal(err)
	}
	return counts[subject]
}

// Resources returns the resource indicators the authorizations named.
func (a *AS) Resources() []string {
	a.t.Helper()
	var seen []string
	if err := a.get("/test/resources", &seen); err != nil {
		a.t.Fatal(err)
	}
	return seen
}

// RevokeSubject revokes every grant of subject as its client would at the
// revocation endpoint: the refresh tokens and their access tokens.
func (a *AS) RevokeSubject(ctx context.Context, subject string) error {
	return a.post(ctx, "/test/revoke", url.Values{"subject": {subject}})
}

// introspection is the part of an RFC 7662 answer the resource uses.
type introspection struct {
	Active  bool   `json:"active"`
	Subject string `json:"sub"`
	Scope   string `json:"scope"`
	Expires int64  `json:"exp"`
}

// introspect checks an access token at the introspection endpoint, as the
// resource server's client, and returns its subject, scopes and expiry.
func (a *AS) introspect(ctx context.Context, token string) (subject string, scopes []string, expires time.Time, err error) {
	req, err := a.form(ctx, "/oauth2/introspect", url.Values{"token": {token}, "token_type_hint": {"access_token"}})
	if err != nil {
		return "", nil, time.Time{}, err
	}
	req.SetBasicAuth(resourceClient, resourceSecret)
	var ti introspection
	if err := a.do(req, http.StatusOK, &ti); err != nil {
		return "", nil, time.Time{}, err
	}
	if !ti.Active {
		return "", nil, time.Time{}, fmt.Errorf("oauthas: the token is not active")
	}
	return ti.Subject, strings.Fields(ti.Scope), time.Unix(ti.Expires, 0), nil
}

func (a *AS) get(path string, v any) error {
	req, err := http.NewRequest(http.MethodGet, a.URL+path, nil)
	if err != nil {
		return err
	}
	return a.do(req, http.StatusOK, v)
}

func (a *AS) post(ctx context.Context, path string, form url.Values) error {
	req, err := a.form(ctx, path, form)
	if err != nil {
		return err
	}
	return a.do(req, http.StatusNoContent, nil)
}

func (a *AS) form(ctx context.Context, path string, form url.Values) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req, nil
}

// do sends req, wants status, and decodes the JSON answer into v unless
// v is nil.
func (a *AS) do(req *http.Request, status int, v any) error {
	resp, err := a.client.Do(req)
	if err != nil {
		return fmt.Errorf("oauthas: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("oauthas: %s %s: %w", req.Method, req.URL.Path, err)
	}
	if resp.StatusCode != status {
		return fmt.Errorf("oauthas: %s %s: %s: %s", req.Method, req.URL.Path, resp.Status, strings.TrimSpace(string(body)))
	}
	if v == nil {
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("oauthas: %s %s: %w", req.Method, req.URL.Path, err)
	}
	return nil
}
