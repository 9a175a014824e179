package signin

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/preflightmcp/preflight/gateway/internal/vault"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newVault returns an empty vault on SQLite, closed with the test.
func newVault(t *testing.T, o *vault.Options) *vault.Vault {
	t.Helper()
	key, err := vault.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	v, err := vault.Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "vault.db"), []vault.Key{key}, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

// newManager returns a Manager of servers on a fresh vault (unless o has a
// Store) whose page is at https://gw.example/ui (unless o has a
// CallbackURL), closed with the test.
func newManager(t *testing.T, servers []Server, o Options) *Manager {
	t.Helper()
	if o.Store == nil {
		o.Store = newVault(t, nil)
	}
	if o.CallbackURL == nil {
		o.CallbackURL = func() string { return CallbackURL("https://gw.example/ui") }
	}
	m, err := New(servers, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// peer is an upstream MCP server on loopback with the metadata documents a
// sign-in reads: it refuses POST /mcp with 401 and challenge, and serves
// docs (path -> JSON, "{base}" standing for its URL) as they are. It
// issues no token.
type peer struct {
	base string

	mu   sync.Mutex
	hits []string // "METHOD path" of each request
	body []byte   // of the last POST to /register
}

func newPeer(t *testing.T, challenge string, docs map[string]string) *peer {
	t.Helper()
	p := &peer{}
	srv := httptest.NewUnstartedServer(nil)
	p.base = "http://" + srv.Listener.Addr().String()
	challenge = strings.ReplaceAll(challenge, "{base}", p.base)
	served := map[string]string{}
	for path, doc := range docs {
		served[path] = strings.ReplaceAll(doc, "{base}", p.base)
	}
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.hits = append(p.hits, r.Method+" "+r.URL.Path)
		if r.URL.Path == "/register" {
			p.body = readAll(r)
		}
		p.mu.Unlock()
		if r.Method == http.MethodPost && r.URL.Path == "/mcp" {
			if challenge != "" {
				w.Header().Set("WWW-Authenticate", challenge)
			}
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		doc, ok := served[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/register" {
			w.WriteHeader(http.StatusCreated)
		}
		w.Write([]byte(doc))
	})
	srv.Start()
	t.Cleanup(srv.Close)
	return p
}

func readAll(r *http.Request) []byte {
	b, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	return b
}

// requests returns how many requests the peer had of "METHOD path".
func (p *peer) requests(of string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, h := range p.hits {
		if h == of {
			n++
		}
	}
	return n
}

// registration returns the last dynamic registration's request body.
func (p *peer) registration(t *testing.T) map[string]any {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	var m map[string]any
	if err := json.Unmarshal(p.body, &m); err != nil {
		t.Fatalf("registration request %q: %v", p.body, err)
	}
	return m
}

// Metadata documents, "{base}" standing for the peer's URL.
const (
	// prmDoc names the authorization server at {base}/as.
	prmDoc = `{"resource":"{base}/mcp","authorization_servers":["{base}/as"]}`
	// asDoc is {base}/as's metadata: RFC 9207 iss, offline_access.
	asDoc = `{"issuer":"{base}/as","authorization_endpoint":"{base}/as/authorize","token_endpoint":"{base}/as/token",
		"code_challenge_methods_supported":["S256"],"scopes_supported":["files:read","files:write","offline_access"],
		"authorization_response_iss_parameter_supported":true}`
	prmPath = "/.well-known/oauth-protected-resource/mcp"
	asPath  = "/.well-known/oauth-authorization-server/as"
)

// begin starts principal's sign-in to server and returns the authorization
// URL.
func begin(t *testing.T, m *Manager, principal, server string) *url.URL {
	t.Helper()
	u, err := m.Begin(t.Context(), principal, server)
	if err != nil {
		t.Fatalf("Begin(%q, %q): %v", principal, server, err)
	}
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// underWayNow returns how many sign-ins hold a slot.
func (m *Manager) underWayNow() (all int, by map[string]int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	by = map[string]int{}
	for p, n := range m.underWayBy {
		by[p] = n
	}
	return m.underWay, by
}
