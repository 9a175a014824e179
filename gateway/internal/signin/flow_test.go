package signin

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"

	"github.com/preflightmcp/preflight/gateway/internal/vault"
)

// TestBeginAuthorizationURL: the URL a sign-in sends the browser to is the
// authorization endpoint the upstream's metadata names, with PKCE S256, a
// state, the page's callback, the resource indicator and the
// pre-registered client.
func TestBeginAuthorizationURL(t *testing.T) {
	t.Parallel()
	p := newPeer(t, `Bearer resource_metadata="{base}/meta/prm", scope="files:read"`,
		map[string]string{"/meta/prm": prmDoc, asPath: asDoc})
	m := newManager(t, []Server{{Name: "files", URL: p.base + "/mcp", ClientID: "gw-client", Issuer: p.base + "/as"}}, Options{})
	u := begin(t, m, "alice", "files")
	q := u.Query()
	if got := u.Scheme + "://" + u.Host + u.Path; got != p.base+"/as/authorize" {
		t.Errorf("authorization endpoint %s, want %s/as/authorize", got, p.base)
	}
	for k, want := range map[string]string{
		"response_type":         "code",
		"client_id":             "gw-client",
		"redirect_uri":          "https://gw.example/ui/connections/callback",
		"code_challenge_method": "S256",
		"resource":              p.base + "/mcp",
	} {
		if q.Get(k) != want {
			t.Errorf("%s = %q, want %q", k, q.Get(k), want)
		}
	}
	if len(q.Get("state")) < 16 || len(q.Get("code_challenge")) < 43 {
		t.Errorf("state %q, code_challenge %q: want both, unguessable", q.Get("state"), q.Get("code_challenge"))
	}
	if n := p.requests("POST /mcp"); n != 1 {
		t.Errorf("the upstream was asked %d times without a token; its first refusal carries the challenge", n)
	}
}

// TestDiscovery: where a sign-in finds the authorization server (the
// challenge's resource_metadata, else the well-known protected-resource
// metadata; RFC 8414, else OpenID metadata; the first of several
// authorization servers), which documents it ignores (another resource's,
// one over 1 MiB), and which it refuses (another issuer's, one without
// PKCE, none named).
func TestDiscovery(t *testing.T) {
	t.Parallel()
	big := `{"resource":"{base}/mcp","authorization_servers":["{base}/evil"],"pad":"` + strings.Repeat("a", 1<<20) + `"}`
	for _, c := range []struct {
		name, challenge string
		docs            map[string]string
		want            string // authorization endpoint, under {base}
		wantErr         string
	}{
		{name: "the challenge names the metadata", challenge: `Bearer resource_metadata="{base}/meta/prm"`,
			docs: map[string]string{"/meta/prm": prmDoc, asPath: asDoc}, want: "/as/authorize"},
		{name: "no challenge: the well-known metadata at the endpoint's path",
			docs: map[string]string{prmPath: prmDoc, asPath: asDoc}, want: "/as/authorize"},
		{name: "a challenge without resource_metadata", challenge: `Bearer realm="files"`,
			docs: map[string]string{prmPath: prmDoc, asPath: asDoc}, want: "/as/authorize"},
		{name: "several authorization servers: the first",
			docs: map[string]string{
				prmPath: `{"resource":"{base}/mcp","authorization_servers":["{base}/one","{base}/as"]}`,
				"/.well-known/oauth-authorization-server/one": strings.ReplaceAll(asDoc, "{base}/as", "{base}/one"),
				asPath: asDoc,
			}, want: "/one/authorize"},
		{name: "OpenID metadata when RFC 8414's is missing",
			docs: map[string]string{prmPath: prmDoc, "/.well-known/openid-configuration/as": asDoc}, want: "/as/authorize"},
		{name: "another resource's metadata is ignored", challenge: `Bearer resource_metadata="{base}/meta/prm"`,
			docs: map[string]string{"/meta/prm": strings.Replace(prmDoc, "{base}/mcp", "{base}/other", 1), prmPath: prmDoc, asPath: asDoc},
			want: "/as/authorize"},
		{name: "a document over 1 MiB is not read", challenge: `Bearer resource_metadata="{base}/meta/prm"`,
			docs: map[string]string{"/meta/prm": big, prmPath: prmDoc, asPath: asDoc}, want: "/as/authorize"},
		{name: "another issuer's metadata",
			docs:    map[string]string{prmPath: prmDoc, asPath: strings.Replace(asDoc, `"issuer":"{base}/as"`, `"issuer":"{base}/elsewhere"`, 1)},
			wantErr: "does not match issuer"},
		{name: "no PKCE",
			docs:    map[string]string{prmPath: prmDoc, asPath: strings.Replace(asDoc, `"code_challenge_methods_supported":["S256"],`, "", 1)},
			wantErr: "PKCE"},
		{name: "no authorization server",
			docs:    map[string]string{prmPath: `{"resource":"{base}/mcp","authorization_servers":[]}`},
			wantErr: "no authorization servers"},
		{name: "a script for an endpoint",
			docs:    map[string]string{prmPath: prmDoc, asPath: strings.Replace(asDoc, `"{base}/as/authorize"`, `"javascript:alert(1)"`, 1)},
			wantErr: "disallowed scheme"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := newPeer(t, c.challenge, c.docs)
			m := newManager(t, []Server{{Name: "files", URL: p.base + "/mcp", ClientID: "gw-client"}}, Options{})
			u, err := m.Begin(t.Context(), "alice", "files")
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("Begin = %q, %v; want an error saying %q", u, err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := p.base + c.want; !strings.HasPrefix(u, want+"?") {
				t.Errorf("Begin = %s, want %s?...", u, want)
			}
		})
	}
}

// TestRegistration: how the gateway names itself to the authorization
// server: its client ID metadata document where the server takes one
// (the configured one, or the page's own when the page is https), else
// the pre-registered client, else dynamic registration with the page's
// callback and no secret; pre-registered credentials of another issuer are
// refused.
func TestRegistration(t *testing.T) {
	t.Parallel()
	cimd := strings.Replace(asDoc, `"issuer"`, `"client_id_metadata_document_supported":true,"issuer"`, 1)
	dcr := strings.Replace(asDoc, `"issuer"`, `"registration_endpoint":"{base}/register","issuer"`, 1)
	for _, c := range []struct {
		name     string
		as       string
		server   Server
		page     string
		want     string // client_id, "{base}" standing for the peer's URL
		wantErr  string
		register bool
	}{
		{name: "the page's metadata document", as: cimd, page: "https://gw.example/ui",
			want: "https://gw.example/ui/connections/client.json"},
		{name: "the configured metadata document", as: cimd, page: "https://gw.example/ui",
			server: Server{ClientMetadataURL: "https://gw.example/client.json", ClientID: "gw-client"}, want: "https://gw.example/client.json"},
		{name: "an http page has none: pre-registered", as: cimd, page: "http://gw.example/ui",
			server: Server{ClientID: "gw-client"}, want: "gw-client"},
		{name: "no metadata documents taken: pre-registered", as: dcr, page: "https://gw.example/ui",
			server: Server{ClientID: "gw-client", ClientSecret: "s"}, want: "gw-client"},
		{name: "pre-registered at another issuer", as: dcr, page: "https://gw.example/ui",
			server: Server{ClientID: "gw-client", Issuer: "https://as.example"}, wantErr: "pre-registered"},
		{name: "dynamic registration", as: dcr, page: "https://gw.example/ui", want: "dyn-1", register: true},
		{name: "none possible", as: asDoc, page: "https://gw.example/ui", wantErr: "no configured client registration"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := newPeer(t, "", map[string]string{prmPath: prmDoc, asPath: c.as, "/register": `{"client_id":"dyn-1"}`})
			s := c.server
			s.Name, s.URL = "files", p.base+"/mcp"
			m := newManager(t, []Server{s}, Options{ClientName: "test gateway", CallbackURL: func() string { return CallbackURL(c.page) }})
			u, err := m.Begin(t.Context(), "alice", "files")
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("Begin = %q, %v; want an error saying %q", u, err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			pu, err := url.Parse(u)
			if err != nil {
				t.Fatal(err)
			}
			if got := pu.Query().Get("client_id"); got != c.want {
				t.Errorf("client_id %q, want %q", got, c.want)
			}
			if n := p.requests("POST /register"); (n > 0) != c.register {
				t.Fatalf("%d registrations, want some: %v", n, c.register)
			}
			if c.register {
				r := p.registration(t)
				if uris, _ := r["redirect_uris"].([]any); len(uris) != 1 || uris[0] != CallbackURL(c.page) {
					t.Errorf("registered redirect_uris %v, want the page's callback", r["redirect_uris"])
				}
				if r["token_endpoint_auth_method"] != "none" || r["client_name"] != "test gateway" {
					t.Errorf("registration %v: want a public client named as configured", r)
				}
			}
		})
	}
}

// TestScopes: a sign-in asks for the scopes of the upstream's challenge
// (else those its metadata lists) and the configured ones, once each, and
// offline_access only where the authorization server offers it.
func TestScopes(t *testing.T) {
	t.Parallel()
	noOffline := strings.Replace(asDoc, `,"offline_access"`, "", 1)
	for _, c := range []struct {
		name, challenge, prm, as string
		configured               []string
		want                     string
	}{
		{name: "the challenge's, the configured ones, offline_access", challenge: `Bearer scope="files:read"`,
			configured: []string{"files:admin", "files:read", "offline_access"}, want: "files:admin files:read offline_access"},
		{name: "the metadata's when the challenge names none", challenge: `Bearer realm="x"`,
			prm: `{"resource":"{base}/mcp","authorization_servers":["{base}/as"],"scopes_supported":["a","b"]}`, want: "a b offline_access"},
		{name: "no offline_access where it is not offered", challenge: `Bearer scope="files:read"`, as: noOffline,
			configured: []string{"offline_access"}, want: "files:read"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			prm, as := c.prm, c.as
			if prm == "" {
				prm = prmDoc
			}
			if as == "" {
				as = asDoc
			}
			p := newPeer(t, c.challenge, map[string]string{prmPath: prm, asPath: as})
			m := newManager(t, []Server{{Name: "files", URL: p.base + "/mcp", ClientID: "gw-client", Scopes: c.configured}}, Options{})
			if got := scopes(begin(t, m, "alice", "files")); got != c.want {
				t.Errorf("scope %q, want %q", got, c.want)
			}
		})
	}
}

// TestStepUp: after the upstream refused a principal's grant with 403
// insufficient_scope, their next sign-in starts from that challenge (the
// upstream is not asked again) and asks for what was granted besides; a
// 401 keeps no challenge, and another principal's sign-in is not
// affected.
func TestStepUp(t *testing.T) {
	t.Parallel()
	p := newPeer(t, `Bearer scope="files:read"`, map[string]string{prmPath: prmDoc, asPath: asDoc})
	v := newVault(t, nil)
	for _, who := range []string{"alice", "bob"} {
		if err := v.Put(t.Context(), &vault.Connection{Principal: who, Server: "files", ClientID: "gw-client", Scopes: "files:read",
			Token: oauth2.Token{AccessToken: "at-" + who}}); err != nil {
			t.Fatal(err)
		}
	}
	m := newManager(t, []Server{{Name: "files", URL: p.base + "/mcp", ClientID: "gw-client"}}, Options{Store: v})
	m.Refused(t.Context(), "files", "alice", &http.Response{StatusCode: http.StatusForbidden,
		Header: http.Header{"Www-Authenticate": {`Bearer error="insufficient_scope", scope="files:write"`}}})
	m.Refused(t.Context(), "files", "bob", &http.Response{StatusCode: http.StatusForbidden,
		Header: http.Header{"Www-Authenticate": {`Bearer error="invalid_request"`}}}) // not about scope: ignored
	if got := scopes(begin(t, m, "alice", "files")); got != "files:read files:write offline_access" {
		t.Errorf("alice's step-up asks for %q, want the challenge's and what she was granted", got)
	}
	if n := p.requests("POST /mcp"); n != 0 {
		t.Errorf("a step-up asked the upstream again (%d requests); it starts from the refusal", n)
	}
	if got := scopes(begin(t, m, "bob", "files")); got != "files:read offline_access" {
		t.Errorf("bob's sign-in asks for %q", got)
	}
	if n := p.requests("POST /mcp"); n != 1 {
		t.Errorf("bob's sign-in asked the upstream %d times, want once", n)
	}
}

// TestComplete: the authorization server's redirect finishes only the
// sign-in its state names, once; an error it sends back, a missing or
// wrong iss (the server advertises RFC 9207) fail the sign-in, keep
// nothing, and give its slot back.
func TestComplete(t *testing.T) {
	t.Parallel()
	p := newPeer(t, `Bearer scope="files:read"`, map[string]string{prmPath: prmDoc, asPath: asDoc})
	v := newVault(t, nil)
	m := newManager(t, []Server{{Name: "files", URL: p.base + "/mcp", ClientID: "gw-client"}}, Options{Store: v})
	for _, c := range []struct {
		name    string
		answer  func(state string) url.Values
		wantErr string
	}{
		{"refused by the authorization server", func(state string) url.Values {
			return url.Values{"state": {state}, "error": {"access_denied"}, "error_description": {"the user said no"}}
		}, "refused: access_denied: the user said no"},
		{"no iss", func(state string) url.Values {
			return url.Values{"state": {state}, "code": {"c"}}
		}, "iss parameter"},
		{"another issuer", func(state string) url.Values {
			return url.Values{"state": {state}, "code": {"c"}, "iss": {"https://as.example"}}
		}, "does not match expected issuer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			state := begin(t, m, "alice", "files").Query().Get("state")
			for _, q := range []url.Values{{"state": {"not-" + state}, "code": {"c"}}, {"code": {"c"}}, {"state": {""}}} {
				if _, _, err := m.Complete(t.Context(), q); !errors.Is(err, ErrUnknownFlow) {
					t.Errorf("Complete(%v) = %v, want ErrUnknownFlow", q, err)
				}
			}
			principal, server, err := m.Complete(t.Context(), c.answer(state))
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("Complete = %v, want an error saying %q", err, c.wantErr)
			}
			if principal != "alice" || server != "files" {
				t.Errorf("Complete named %q, %q; want alice, files", principal, server)
			}
			if _, _, err := m.Complete(t.Context(), c.answer(state)); !errors.Is(err, ErrUnknownFlow) {
				t.Errorf("the same redirect again: %v, want ErrUnknownFlow", err)
			}
			if _, err := v.Get(t.Context(), "alice", "files"); !errors.Is(err, vault.ErrNotFound) {
				t.Errorf("a failed sign-in kept a grant: %v", err)
			}
		})
	}
}

// TestBounds: sign-ins under way are bounded in all and per principal
// (a shared server's count as nobody's), a slot is taken only by a
// sign-in that started, and Close ends those under way.
func TestBounds(t *testing.T) {
	t.Parallel()
	p := newPeer(t, "", map[string]string{prmPath: prmDoc, asPath: asDoc})
	callback := CallbackURL("https://gw.example/ui")
	m := newManager(t, []Server{
		{Name: "files", URL: p.base + "/mcp", ClientID: "gw-client"},
		{Name: "wiki", URL: p.base + "/mcp", ClientID: "gw-client", Shared: true},
		{Name: "down", URL: "http://127.0.0.1:1/mcp"},
	}, Options{MaxFlows: 4, MaxFlowsPerPrincipal: 2, CallbackURL: func() string { return callback }})
	begin(t, m, "alice", "files")
	begin(t, m, "alice", "files")
	if _, err := m.Begin(t.Context(), "alice", "files"); err == nil || !strings.Contains(err.Error(), "too many") {
		t.Fatalf("alice's third sign-in: %v, want too many", err)
	}
	if _, err := m.Begin(t.Context(), "bob", "down"); err == nil {
		t.Fatal("a sign-in to an unreachable upstream started")
	}
	callback = "/relative"
	if _, err := m.Begin(t.Context(), "bob", "files"); err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Fatalf("a sign-in with a relative callback: %v", err)
	}
	callback = CallbackURL("https://gw.example/ui")
	begin(t, m, "bob", "wiki") // shared: nobody's slot
	begin(t, m, "carol", "files")
	if _, err := m.Begin(t.Context(), "dave", "files"); err == nil || !strings.Contains(err.Error(), "too many") {
		t.Fatalf("the fifth sign-in: %v, want too many", err)
	}
	all, by := m.underWayNow()
	if want := map[string]int{"alice": 2, "": 1, "carol": 1}; all != 4 || len(by) != len(want) || by["alice"] != 2 || by[""] != 1 || by["carol"] != 1 {
		t.Errorf("under way: %d, %v; want 4, %v", all, by, want)
	}
	if _, err := m.Begin(t.Context(), "alice", "nope"); err == nil {
		t.Error("a sign-in to an unknown server started")
	}
}

// TestClientMetadata: the gateway's client ID metadata document names
// itself at its URL under the page, with the page's callback.
func TestClientMetadata(t *testing.T) {
	t.Parallel()
	m := newManager(t, nil, Options{ClientName: "test gateway"})
	got, err := m.ClientMetadata()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"client_id":"https://gw.example/ui/connections/client.json"`, `"client_name":"test gateway"`,
		`"redirect_uris":["https://gw.example/ui/connections/callback"]`, `"token_endpoint_auth_method":"none"`} {
		if !strings.Contains(string(got), want) {
			t.Errorf("client metadata %s lacks %s", got, want)
		}
	}
	for _, c := range []struct{ own, callback, want string }{
		{"", "https://gw.example/ui/connections/callback", "https://gw.example/ui/connections/client.json"},
		{"", "http://gw.example/ui/connections/callback", ""},
		{"", "https://gw.example/elsewhere", ""},
		{"https://cimd.example/c.json", "http://gw.example/ui/connections/callback", "https://cimd.example/c.json"},
	} {
		if got := clientMetadataURL(Server{ClientMetadataURL: c.own}, c.callback); got != c.want {
			t.Errorf("clientMetadataURL(%q, %q) = %q, want %q", c.own, c.callback, got, c.want)
		}
	}
}

// scopes returns the scopes an authorization URL asks for, sorted (the
// go-sdk's order is a map's).
func scopes(u *url.URL) string {
	s := strings.Fields(u.Query().Get("scope"))
	slices.Sort(s)
	return strings.Join(s, " ")
}

// TestCompleteOnce: a sign-in takes one answer: another redirect with its
// state, while the first is being exchanged, is refused at once rather
// than waiting for an outcome that goes to the first.
func TestCompleteOnce(t *testing.T) {
	t.Parallel()
	m := newManager(t, []Server{{Name: "files", URL: "https://files.example/mcp"}}, Options{})
	f := &flow{principal: "alice", server: "files", result: make(chan *auth.AuthorizationResult, 1),
		refused: make(chan error, 1), done: make(chan error, 1), cancel: func() {}}
	m.mu.Lock()
	m.flows["s1"] = f // as the handler's code fetcher leaves it
	m.mu.Unlock()
	first := make(chan error, 1)
	go func() {
		_, _, err := m.Complete(t.Context(), url.Values{"state": {"s1"}, "code": {"c1"}})
		first <- err
	}()
	if r := <-f.result; r.Code != "c1" { // the handler has the code, and exchanges it
		t.Fatalf("the handler got %+v", r)
	}
	gone, cancel := context.WithCancel(t.Context())
	cancel() // a second answer that waited would end with this context
	for _, q := range []url.Values{{"state": {"s1"}, "error": {"access_denied"}}, {"state": {"s1"}, "code": {"c2"}}} {
		if _, _, err := m.Complete(gone, q); !errors.Is(err, ErrUnknownFlow) {
			t.Errorf("Complete(%v) while the first answer is exchanged: %v, want ErrUnknownFlow", q, err)
		}
	}
	f.done <- nil
	if err := <-first; err != nil {
		t.Fatalf("the first answer: %v", err)
	}
}

// TestSlotGivenBack: a sign-in that ended, refused in Begin or answered
// in Complete, no longer counts against its principal's bound when the
// call returns: they may start again at once.
func TestSlotGivenBack(t *testing.T) {
	t.Parallel()
	p := newPeer(t, "", map[string]string{prmPath: prmDoc, asPath: asDoc,
		"/.well-known/oauth-protected-resource/wrong": `{"resource":"{base}/wrong","authorization_servers":["{base}/bad"]}`,
		"/.well-known/oauth-authorization-server/bad": strings.Replace(asDoc, `"issuer":"{base}/as"`, `"issuer":"{base}/elsewhere"`, 1)})
	m := newManager(t, []Server{{Name: "files", URL: p.base + "/mcp", ClientID: "gw-client"},
		{Name: "wrong", URL: p.base + "/wrong", ClientID: "gw-client"}}, Options{MaxFlowsPerPrincipal: 1})
	for range 20 {
		if _, err := m.Begin(t.Context(), "alice", "wrong"); err == nil || !strings.Contains(err.Error(), "does not match issuer") {
			t.Fatalf("Begin of a server whose metadata is another issuer's: %v", err)
		}
	}
	for range 20 {
		state := begin(t, m, "alice", "files").Query().Get("state")
		if _, _, err := m.Complete(t.Context(), url.Values{"state": {state}, "error": {"access_denied"}}); err == nil {
			t.Fatal("a refused sign-in completed")
		}
	}
	if all, _ := m.underWayNow(); all != 0 {
		t.Errorf("%d sign-ins under way after all ended", all)
	}
}
