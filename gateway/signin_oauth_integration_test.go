//go:build integration

package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/text"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/internal/auth"
	"github.com/preflightmcp/preflight/gateway/internal/page"
	"github.com/preflightmcp/preflight/gateway/internal/signin"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/fleet"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/oauthas"
	"github.com/preflightmcp/preflight/gateway/internal/vault"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

// oauthRig is an authorization server, the MCP server it protects
// ("whoami"), and principals with static tokens for the gateway.
type oauthRig struct {
	as     *oauthas.AS
	res    *oauthas.Resource
	auth   *auth.Authenticator
	tokens map[string]string
}

func newOAuthRig(t *testing.T, principals ...string) *oauthRig {
	t.Helper()
	return newOAuthRigWith(t, nil, principals...)
}

// newOAuthRigWith is newOAuthRig with the upstream's options.
func newOAuthRigWith(t *testing.T, o *oauthas.ResourceOptions, principals ...string) *oauthRig {
	t.Helper()
	as := oauthas.Start(t)
	a, tokens := staticTokens(t, principals...)
	return &oauthRig{as: as, res: oauthas.StartResource(t, as, o), auth: a, tokens: tokens}
}

// oauthGateway is a gateway in front of the rig's whoami upstream, which
// signs in with a pre-registered client, its page at /ui.
type oauthGateway struct {
	g    *gateway.Gateway
	base string // http://ADDR
	mcp  string
}

// startOAuthGateway starts a gateway on store; client is the rig's client
// it signs in as.
func startOAuthGateway(t *testing.T, r *oauthRig, store signin.Store, client string) *oauthGateway {
	t.Helper()
	o := &gateway.UpstreamOAuth{ClientID: client}
	if client == oauthas.ConfidentialClient {
		o.ClientSecret = oauthas.ConfidentialSecret
	}
	verify := r.auth
	login := page.NewCredentialLogin(&page.CredentialLoginOptions{MaxBytes: auth.MaxTokenBytes,
		Verify: func(ctx context.Context, credential string) (page.Identity, error) {
			p, err := verify.Verify(ctx, credential)
			if err != nil {
				return page.Identity{}, err
			}
			return page.Identity{Principal: p.Name}, nil
		}})
	// Nobody has connected the upstream yet: it waits for somebody, and
	// startGateway does not wait for it.
	g, mcpURL := startGateway(t, &gateway.Options{
		Upstreams: []gateway.UpstreamSpec{{Name: "whoami", URL: r.res.URL, OAuth: o}},
		Page:      &gateway.Page{Login: login},
		Auth:      r.auth,
		Vault:     store,
	})
	og := &oauthGateway{g: g, base: strings.TrimSuffix(mcpURL, gateway.MCPPath), mcp: mcpURL}
	// Serve sets the page's URL before it serves: once /healthz answers,
	// it is set.
	if resp, err := http.Get(og.base + gateway.HealthPath); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	return og
}

// openVault opens a SQLite vault with one new key, closed when the test
// ends.
func openVault(t *testing.T) *vault.Vault {
	t.Helper()
	k, err := vault.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return openVaultAt(t, "sqlite:"+filepath.Join(t.TempDir(), "vault.db"), k)
}

func openVaultAt(t *testing.T, dsn string, keys ...vault.Key) *vault.Vault {
	t.Helper()
	v, err := vault.Open(t.Context(), dsn, keys, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

// person is somebody with a browser, a principal of the gateway and a user
// of the authorization server.
type person struct {
	name  string
	token string // the gateway's credential
	web   *http.Client
}

func (r *oauthRig) person(t *testing.T, name string) *person {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	r.as.LogIn(jar, name)
	return &person{name: name, token: r.tokens[name], web: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

// signIn signs p in to og's page with their credential.
func (p *person) signIn(t *testing.T, og *oauthGateway) {
	t.Helper()
	status, body := p.send(t, http.MethodPost, og.base+"/ui/login", url.Values{"credential": {p.token}})
	if status != http.StatusOK || strings.Contains(body, `name="credential"`) {
		t.Fatalf("%s signing in to the page: %d\n%s", p.name, status, text.Clip(body, 3000))
	}
}

// connect follows link (the page's Connect) through the authorization
// server back to the page, and fails unless the page says connected.
func (p *person) connect(t *testing.T, link string) {
	t.Helper()
	status, body := p.send(t, http.MethodGet, link, nil)
	if status != http.StatusOK || !strings.Contains(body, `id="connected"`) {
		t.Fatalf("%s connecting: %d\n%s", p.name, status, text.Clip(body, 3000))
	}
}

// connections returns p's Connections view.
func (p *person) connections(t *testing.T, og *oauthGateway) string {
	t.Helper()
	status, body := p.send(t, http.MethodGet, og.base+"/ui/connections", nil)
	if status != http.StatusOK {
		t.Fatalf("%s's connections: %d\n%s", p.name, status, text.Clip(body, 3000))
	}
	return body
}

// disconnect presses Disconnect on p's Connections view.
func (p *person) disconnect(t *testing.T, og *oauthGateway, server string) {
	t.Helper()
	m := csrfRE.FindStringSubmatch(p.connections(t, og))
	if m == nil {
		t.Fatalf("%s's connections have no Disconnect form", p.name)
	}
	status, body := p.send(t, http.MethodPost, og.base+"/ui/connections/"+server+"/disconnect", url.Values{"csrf": {html.UnescapeString(m[1])}})
	if status != http.StatusOK {
		t.Fatalf("%s disconnecting: %d\n%s", p.name, status, text.Clip(body, 3000))
	}
}

func (p *person) send(t *testing.T, method, u string, form url.Values) (int, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(t.Context(), method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := p.web.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(data)
}

// peer is p's MCP client of og.
func (p *person) peer(og *oauthGateway) *wiretest.Peer {
	w := wiretest.Stateless(og.mcp, nil)
	w.Header = http.Header{"Authorization": {"Bearer " + p.token}}
	return w
}

var connectRE = regexp.MustCompile(`http://\S+/ui/connections/whoami/connect`)

// whoami calls the whoami tool as p, and returns the subject it answered,
// or the gateway's link to connect when it answered with one.
func (p *person) whoami(t *testing.T, og *oauthGateway) (subject, link string) {
	t.Helper()
	r := p.peer(og).Call(t, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}})
	if r.Error != nil {
		t.Fatalf("%s's whoami: %s", p.name, r.Raw)
	}
	if r.Result["isError"] == true {
		text := toolErrorText(t, r)
		if l := connectRE.FindString(text); l != "" {
			return "", l
		}
		t.Fatalf("%s's whoami failed: %s", p.name, text)
	}
	var id oauthas.Identity
	raw, _ := json.Marshal(r.Result["structuredContent"])
	if err := json.Unmarshal(raw, &id); err != nil || id.Subject == "" {
		t.Fatalf("%s's whoami answered no subject: %s", p.name, r.Raw)
	}
	return id.Subject, ""
}

// whoamiQuiet is whoami for another goroutine than the test's: it returns
// "" for any failure.
func (p *person) whoamiQuiet(ctx context.Context, og *oauthGateway) (subject string, ok bool) {
	c := &fleet.Client{URL: og.mcp, Version: fleet.Modern, HTTP: &http.Client{Transport: bearer{p.token}, Timeout: 30 * time.Second}}
	r, err := c.Call(ctx, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}})
	if err != nil || r.Error != nil || r.Result["isError"] == true {
		return "", false
	}
	var id oauthas.Identity
	raw, _ := json.Marshal(r.Result["structuredContent"])
	if json.Unmarshal(raw, &id) != nil {
		return "", false
	}
	return id.Subject, true
}

// whoamiTogether calls whoami as p n times on each of ogs at once and
// returns the subjects the calls ran as ("" for a failed one).
func (p *person) whoamiTogether(ctx context.Context, n int, ogs ...*oauthGateway) []string {
	var wg sync.WaitGroup
	subjects := make(chan string, n*len(ogs))
	for range n {
		for _, og := range ogs {
			wg.Go(func() {
				subject, _ := p.whoamiQuiet(ctx, og)
				subjects <- subject
			})
		}
	}
	wg.Wait()
	close(subjects)
	var out []string
	for s := range subjects {
		out = append(out, s)
	}
	return out
}

// connectEach signs each of people in to the page of og and connects
// them to the whoami upstream, then waits until og lists its tools.
func connectEach(t *testing.T, og *oauthGateway, people ...*person) {
	t.Helper()
	for _, p := range people {
		p.signIn(t, og)
		p.connect(t, og.base+"/ui/connections/whoami/connect")
	}
	og.waitListed(t, people[0])
}

// mustBe checks that p's whoami ran with subject's token.
func (p *person) mustBe(t *testing.T, og *oauthGateway, subject string) {
	t.Helper()
	got, link := p.whoami(t, og)
	if link != "" {
		t.Fatalf("%s's whoami was told to connect (%s)", p.name, link)
	}
	if got != subject {
		t.Fatalf("%s's whoami ran as %q, want %q", p.name, got, subject)
	}
}

// mustConnectFirst checks that p's whoami is answered with the link to
// connect and that the upstream was not called; it returns the link.
func (p *person) mustConnectFirst(t *testing.T, og *oauthGateway, res *oauthas.Resource) string {
	t.Helper()
	before := res.Calls()
	got, link := p.whoami(t, og)
	if link == "" {
		t.Fatalf("%s's whoami ran as %q without a connection", p.name, got)
	}
	if res.Calls() != before {
		t.Fatalf("%s's whoami reached the upstream without a connection", p.name)
	}
	if want := og.base + "/ui/connections/whoami/connect"; link != want {
		t.Fatalf("link %q, want %q", link, want)
	}
	return link
}

// waitListed waits until the gateway lists whoami, which it does once
// somebody has connected it.
func (og *oauthGateway) waitListed(t *testing.T, p *person) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), readyTimeout)
	defer cancel()
	for {
		r := p.peer(og).Call(t, "tools/list", nil)
		if strings.Contains(string(r.Raw), `"whoami"`) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the gateway does not list whoami: %s", r.Raw)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestSignInPerPrincipal: alice and bob each connect the upstream on the
// page, with their own account at the authorization server, and each
// one's call carries their own identity; carol, who has not connected,
// gets the link to connect and the upstream is not called. The
// authorization named the upstream as its resource.
func TestSignInPerPrincipal(t *testing.T) {
	r := newOAuthRig(t, "alice", "bob", "carol")
	og := startOAuthGateway(t, r, openVault(t), oauthas.PublicClient)
	alice, bob, carol := r.person(t, "alice"), r.person(t, "bob"), r.person(t, "carol")

	alice.signIn(t, og)
	alice.connect(t, og.base+"/ui/connections/whoami/connect")
	og.waitListed(t, alice)
	link := bob.mustConnectFirst(t, og, r.res)
	bob.signIn(t, og)
	bob.connect(t, link)

	alice.mustBe(t, og, "alice")
	bob.mustBe(t, og, "bob")
	alice.mustBe(t, og, "alice")
	carol.mustConnectFirst(t, og, r.res)

	// The upstream's resources are each account's own: the gateway,
	// which lists it with alice's grant, shows them to nobody.
	if res := bob.peer(og).Call(t, "resources/list", nil); res.Error != nil || strings.Contains(string(res.Raw), "whoami://notes") {
		t.Errorf("bob's resources/list: %s", res.Raw)
	}
	if res := bob.peer(og).Call(t, "resources/read", map[string]any{"uri": "whoami://notes"}); res.Error == nil {
		t.Errorf("bob read a resource of the upstream's: %s", res.Raw)
	}

	for _, res := range r.as.Resources() {
		if res != r.res.URL {
			t.Errorf("an authorization named the resource %q, want %q", res, r.res.URL)
		}
	}
}

// TestSignInLegacySessions: in front of a 2025-11-25 upstream, whose
// sessions are bound to the user who made them (the go-sdk's handler
// answers another user's request on one with 403), alice's and bob's
// calls each run as themselves, on sessions of their own; carol, who has
// not connected, gets the link, and the upstream is not called.
func TestSignInLegacySessions(t *testing.T) {
	r := newOAuthRigWith(t, &oauthas.ResourceOptions{Legacy: true}, "alice", "bob", "carol")
	og := startOAuthGateway(t, r, openVault(t), oauthas.PublicClient)
	alice, bob, carol := r.person(t, "alice"), r.person(t, "bob"), r.person(t, "carol")

	alice.signIn(t, og)
	alice.connect(t, og.base+"/ui/connections/whoami/connect")
	og.waitListed(t, alice)
	if era := og.g.Health().Upstreams[0].Era; era != "2025-11-25" {
		t.Fatalf("the gateway reached the upstream in %q, want 2025-11-25", era)
	}
	bob.signIn(t, og)
	bob.connect(t, bob.mustConnectFirst(t, og, r.res))
	for range 2 {
		bob.mustBe(t, og, "bob")
		alice.mustBe(t, og, "alice")
	}
	carol.mustConnectFirst(t, og, r.res)
	if n := r.res.Refused(); n != 0 {
		t.Errorf("the upstream refused %d requests for their token", n)
	}
}

// TestSignInRefreshOnce: alice's token is due for refresh (it lives less
// than the gateway refreshes ahead, as do the refreshed ones until the
// upstream is listed); her concurrent calls share one refresh, and run
// with the new token.
func TestSignInRefreshOnce(t *testing.T) {
	r := newOAuthRig(t, "alice")
	og := startOAuthGateway(t, r, openVault(t), oauthas.ConfidentialClient)
	alice := r.person(t, "alice")
	r.as.SetAccessTTL(30*time.Second, 30*time.Second)

	alice.signIn(t, og)
	alice.connect(t, og.base+"/ui/connections/whoami/connect")
	og.waitListed(t, alice)
	r.as.SetAccessTTL(30*time.Second, time.Hour)
	before := r.as.Refreshes("alice")
	const n = 8
	for _, s := range alice.whoamiTogether(t.Context(), n, og) {
		if s != "alice" {
			t.Errorf("a concurrent call ran as %q", s)
		}
	}
	if got := r.as.Refreshes("alice") - before; got != 1 {
		t.Errorf("%d refreshes for %d concurrent calls, want 1", got, n)
	}
	alice.mustBe(t, og, "alice")
	if got := r.as.Refreshes("alice") - before; got != 1 {
		t.Errorf("%d refreshes after a call with a fresh token, want 1", got)
	}
}

// TestSignInRevoked: once the authorization server revokes alice's grant,
// her next call gets the link to connect again; connecting again restores
// her calls. Bob's connection is untouched.
func TestSignInRevoked(t *testing.T) {
	r := newOAuthRig(t, "alice", "bob")
	og := startOAuthGateway(t, r, openVault(t), oauthas.PublicClient)
	alice, bob := r.person(t, "alice"), r.person(t, "bob")
	connectEach(t, og, alice, bob)
	alice.mustBe(t, og, "alice")

	if err := r.as.RevokeSubject(t.Context(), "alice"); err != nil {
		t.Fatal(err)
	}
	_, link := alice.whoami(t, og)
	if link == "" {
		t.Fatal("a call with a revoked grant was not told to connect again")
	}
	bob.mustBe(t, og, "bob")
	if _, again := alice.whoami(t, og); again == "" {
		t.Fatal("the call after a refusal was not told to connect again")
	}
	if v := alice.connections(t, og); !strings.Contains(v, "whoami") {
		t.Fatalf("alice's connections:\n%s", text.Clip(v, 3000))
	}
	alice.connect(t, link)
	alice.mustBe(t, og, "alice")
}

// TestSignInDisconnect: disconnecting on the page removes alice's grant:
// her next call gets the link, and bob's still runs.
func TestSignInDisconnect(t *testing.T) {
	r := newOAuthRig(t, "alice", "bob")
	og := startOAuthGateway(t, r, openVault(t), oauthas.PublicClient)
	alice, bob := r.person(t, "alice"), r.person(t, "bob")
	connectEach(t, og, alice, bob)
	alice.mustBe(t, og, "alice")

	alice.disconnect(t, og, "whoami")
	alice.mustConnectFirst(t, og, r.res)
	bob.mustBe(t, og, "bob")
}

// connectionRow returns the whoami row of a Connections view.
func connectionRow(t *testing.T, view string) string {
	t.Helper()
	i := strings.Index(view, `<td class="wrap" data-label="upstream">whoami`)
	if i < 0 {
		t.Fatalf("the view lists no whoami:\n%s", text.Clip(view, 3000))
	}
	row, _, _ := strings.Cut(view[i:], "</tr>")
	return row
}

// TestSignInConnectionsView: the Connections view shows the signed-in
// principal's own connection, with its status, scopes and expiry, and
// nobody else's.
func TestSignInConnectionsView(t *testing.T) {
	r := newOAuthRig(t, "alice", "bob")
	og := startOAuthGateway(t, r, openVault(t), oauthas.PublicClient)
	alice, bob := r.person(t, "alice"), r.person(t, "bob")
	alice.signIn(t, og)
	bob.signIn(t, og)
	alice.connect(t, og.base+"/ui/connections/whoami/connect")

	row := connectionRow(t, alice.connections(t, og))
	for _, want := range []string{">connected<", oauthas.Scope, "offline_access", "<time"} {
		if !strings.Contains(row, want) {
			t.Errorf("alice's row lacks %q:\n%s", want, row)
		}
	}
	row = connectionRow(t, bob.connections(t, og))
	if !strings.Contains(row, "not connected") || strings.Contains(row, oauthas.Scope) || strings.Contains(row, "<time") {
		t.Errorf("bob's row shows a connection he has not made:\n%s", row)
	}
}

// connectQuiet is connect for another goroutine than the test's.
func (p *person) connectQuiet(ctx context.Context, link string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, link, nil)
	if err != nil {
		return err
	}
	resp, err := p.web.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(data), `id="connected"`) {
		return fmt.Errorf("connecting: %d\n%s", resp.StatusCode, text.Clip(string(data), 3000))
	}
	return nil
}

// bobSignedIn starts a gateway whose upstream alice has connected, and
// signs bob in to its page without connecting it.
func bobSignedIn(t *testing.T) (*oauthRig, *oauthGateway, *person) {
	t.Helper()
	r := newOAuthRig(t, "alice", "bob")
	og := startOAuthGateway(t, r, openVault(t), oauthas.PublicClient)
	alice, bob := r.person(t, "alice"), r.person(t, "bob")
	alice.signIn(t, og)
	alice.connect(t, og.base+"/ui/connections/whoami/connect")
	og.waitListed(t, alice)
	bob.signIn(t, og)
	return r, og, bob
}

// TestSignInURLElicitationLegacy: a 2025-11-25 client that declares URL
// elicitation is asked, within the call, to open the link to connect the
// upstream; the person connects it, and the same call goes on and runs as
// them, and the client is told the elicitation completed. A client that
// declines gets the tool error, and the upstream is not called.
func TestSignInURLElicitationLegacy(t *testing.T) {
	r, og, bob := bobSignedIn(t)

	var (
		mu      sync.Mutex
		asked   []*mcp.ElicitParams
		decline bool
	)
	complete := make(chan string, 4)
	c := mcp.NewClient(&mcp.Implementation{Name: "bob-desktop", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params)
			d := decline
			mu.Unlock()
			if d {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			if err := bob.connectQuiet(ctx, req.Params.URL); err != nil {
				return nil, err
			}
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
		ElicitationCompleteHandler: func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			complete <- req.Params.ElicitationID
		},
	})
	ctx, cancel := context.WithTimeout(t.Context(), readyTimeout)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: og.mcp, HTTPClient: &http.Client{Transport: bearer{bob.token}}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	if err != nil || res.IsError || !strings.Contains(contentText(t, res), "subject=bob") {
		t.Fatalf("bob's call, connected while it waited: %v %+v", err, res)
	}
	mu.Lock()
	if len(asked) != 1 || asked[0].Mode != "url" || asked[0].URL != og.base+"/ui/connections/whoami/connect" {
		t.Errorf("asked %+v", asked)
	}
	id := asked[0].ElicitationID
	mu.Unlock()
	if got := <-complete; got != id {
		t.Errorf("elicitation complete for %q, want %q", got, id)
	}

	// Once bob disconnects, a declined question runs nothing.
	bob.disconnect(t, og, "whoami")
	mu.Lock()
	decline = true
	mu.Unlock()
	before := r.res.Calls()
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(contentText(t, res), "/ui/connections/whoami/connect") || r.res.Calls() != before {
		t.Errorf("a declined connection: %v %+v", err, res)
	}
}

// TestSignInURLElicitationModern: a 2026-07-28 client that declares URL
// elicitation gets input_required with the link to connect; once the
// person has connected, its retry with the answer runs as them. A retry
// before connecting is asked again, and the upstream is not called.
func TestSignInURLElicitationModern(t *testing.T) {
	r, og, bob := bobSignedIn(t)

	peer := bob.peer(og)
	peer.Capabilities = map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}
	call := map[string]any{"name": "whoami", "arguments": map[string]any{}}
	question := func() map[string]any {
		t.Helper()
		res := peer.Call(t, "tools/call", call)
		if res.Error != nil || res.Result["resultType"] != "input_required" {
			t.Fatalf("bob's call before connecting: %s", res.Raw)
		}
		q, _ := res.Result["inputRequests"].(map[string]any)[stage.SignInInputKey].(map[string]any)
		params, _ := q["params"].(map[string]any)
		if q["method"] != "elicitation/create" || params["mode"] != "url" || params["url"] != og.base+"/ui/connections/whoami/connect" {
			t.Fatalf("the question: %s", res.Raw)
		}
		return res.Result
	}
	before := r.res.Calls()
	question()
	answered := map[string]any{"name": "whoami", "arguments": map[string]any{},
		"inputResponses": map[string]any{stage.SignInInputKey: map[string]any{"action": "accept"}}}
	if res := peer.Call(t, "tools/call", answered); res.Error != nil || res.Result["resultType"] != "input_required" {
		t.Fatalf("a retry before connecting: %s", res.Raw)
	}
	if r.res.Calls() != before {
		t.Fatal("the upstream was called before bob connected")
	}
	bob.connect(t, og.base+"/ui/connections/whoami/connect")
	res := peer.Call(t, "tools/call", answered)
	if res.Error != nil || res.Result["isError"] == true || !strings.Contains(string(res.Raw), "subject=bob") {
		t.Fatalf("the retry once connected: %s", res.Raw)
	}
}
