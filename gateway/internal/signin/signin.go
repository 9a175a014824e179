// Package signin signs the gateway in to OAuth-protected upstream MCP
// servers on behalf of each principal, and gives every request to such an
// upstream the Authorization of the principal it is made for.
//
// A principal connects an upstream once, from the page: [Manager.Begin]
// discovers the upstream's authorization server (the upstream's
// WWW-Authenticate challenge or its protected-resource metadata, then RFC
// 8414 or OpenID metadata), registers the gateway as a client (a client ID
// metadata document, pre-registered credentials from the configuration, or
// dynamic registration) and returns the authorization URL (PKCE S256, the
// resource indicator, offline_access when offered) to send the person's
// browser to; [Manager.Complete] takes the authorization server's redirect
// back, checks its state and issuer, and exchanges the code. The discovery,
// registration and exchange are the go-sdk's [auth.AuthorizationCodeHandler];
// this package runs it across two HTTP requests and keeps what it grants in a
// [Store], sealed at rest (package vault).
//
// [Manager.Authorization] gives each upstream request its bearer token,
// refreshed shortly before it expires, one refresh at a time across
// replicas (the Store's job). A request with no principal (the gateway's own
// connection, which lists the upstream's tools) uses the grant of the
// principal who connected it first (and still is), or the shared
// connection of a server whose credential is shared.
package signin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/gateway/internal/vault"
)

// Defaults of [Options].
const (
	DefaultFlowTimeout = 10 * time.Minute
	DefaultMaxFlows    = 1024
	DefaultMaxFlowsPer = 8
	// refreshAhead is how long before it expires a token is refreshed.
	refreshAhead = time.Minute
	// maxChallenges bounds the refusals remembered for the next sign-in.
	maxChallenges = 4096
	// maxCached bounds the tokens kept in memory.
	maxCached = 4096
	// cacheTTL bounds how long a grant read from the store is used
	// without reading it again.
	cacheTTL = 30 * time.Second
)

// Server is one upstream that signs in with OAuth.
type Server struct {
	// Name is the upstream's configured name.
	Name string
	// URL is its MCP endpoint.
	URL string
	// Shared means one connection, made by an admin, serves every
	// principal; otherwise each principal connects their own.
	Shared bool
	// ClientID and ClientSecret are pre-registered client credentials
	// ("" when the gateway registers itself); Issuer, when set, is the
	// authorization server they belong to.
	ClientID, ClientSecret, Issuer string
	// Scopes are requested besides those the upstream asks for.
	Scopes []string
	// ClientMetadataURL is the client ID metadata document the gateway
	// names itself by where the authorization server takes them; ""
	// means the gateway's own (ClientMetadataPath on the page) when the
	// page is served over https.
	ClientMetadataURL string
}

// ClientMetadataPath is where the page serves the gateway's client ID
// metadata document, under its URL.
const ClientMetadataPath = "/connections/client.json"

// Options configure a [Manager].
type Options struct {
	// Store keeps the grants. Required.
	Store Store
	// CallbackURL returns where the authorization server sends the
	// browser back (the page's callback), known once the page is served.
	// Required.
	CallbackURL func() string
	// ClientName is how the gateway names itself when it registers.
	// "" means "preflight gateway".
	ClientName string
	// HTTPClient makes the discovery, registration and token requests,
	// as given. Nil means, for each server, a client with a 30 s timeout
	// that reaches only addresses of the kind the server's own is (no
	// private or loopback address for a public server, never a
	// link-local one): an upstream cannot send the gateway into its own
	// network.
	HTTPClient *http.Client
	// FlowTimeout bounds a sign-in from Begin to Complete. Zero means
	// DefaultFlowTimeout.
	FlowTimeout time.Duration
	// MaxFlows and MaxFlowsPerPrincipal bound the sign-ins under way.
	MaxFlows, MaxFlowsPerPrincipal int
	// Logger receives sign-ins, refreshes and their failures. Nil
	// discards.
	Logger *slog.Logger
	// OnEvent, if set, is told each event of a server, for metrics: one of
	// the Event constants. It must not block.
	OnEvent func(server, event string)
}

// Events passed to [Options.OnEvent].
const (
	// EventConnected: a principal connected the server.
	EventConnected = "connected"
	// EventRefreshed: a grant's token was refreshed.
	EventRefreshed = "refreshed"
	// EventRefreshFailed: refreshing a grant's token failed; its
	// principal connects again.
	EventRefreshFailed = "refresh_failed"
	// EventRefused: the server refused a grant's token (401, or 403 for
	// too little scope).
	EventRefused = "refused"
	// EventNotConnected: a call was answered with the link to connect
	// the server (reported by the caller, [Manager.Report]).
	EventNotConnected = "not_connected"
)

// Manager signs principals in to upstreams and authorizes their requests.
type Manager struct {
	opts    Options
	servers map[string]Server

	mu         sync.Mutex
	underWay   int                      // sign-ins under way
	underWayBy map[string]int           // by principal
	flows      map[string]*flow         // by OAuth state
	challenges map[key]challenge        // the last refusal of a principal's request
	cached     map[key]cacheEntry       // unexpired tokens, to spare the store a read per call
	lister     map[string]string        // server -> the principal whose token lists it
	ready      map[string]chan struct{} // server -> closed at its next connection
	clients    map[string]*http.Client  // server -> the client of its sign-in requests
}

type key struct{ principal, server string }

// cacheEntry is a grant read from the store, kept for cacheTTL: a
// disconnection or reconnection on another replica is seen within it.
type cacheEntry struct {
	grant *vault.Connection
	at    time.Time
}

// challenge is the upstream's last refusal of a principal's grant for too
// little scope, kept until they connect again (its WWW-Authenticate starts
// that sign-in).
type challenge struct {
	header http.Header
	at     time.Time
}

// New returns a Manager for servers.
func New(servers []Server, o Options) (*Manager, error) {
	if o.Store == nil {
		return nil, errors.New("signin: Options.Store is required")
	}
	if o.CallbackURL == nil {
		return nil, errors.New("signin: Options.CallbackURL is required")
	}
	if o.ClientName == "" {
		o.ClientName = "preflight gateway"
	}
	if o.FlowTimeout <= 0 {
		o.FlowTimeout = DefaultFlowTimeout
	}
	if o.MaxFlows <= 0 {
		o.MaxFlows = DefaultMaxFlows
	}
	if o.MaxFlowsPerPrincipal <= 0 {
		o.MaxFlowsPerPrincipal = DefaultMaxFlowsPer
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Manager{opts: o, servers: make(map[string]Server, len(servers)),
		flows: map[string]*flow{}, underWayBy: map[string]int{}, challenges: map[key]challenge{}, cached: map[key]cacheEntry{},
		lister: map[string]string{}, ready: map[string]chan struct{}{}, clients: map[string]*http.Client{}}
	for _, s := range servers {
		if s.Name == "" || s.URL == "" {
			return nil, errors.New("signin: a server needs a name and a URL")
		}
		m.servers[s.Name] = s
		m.ready[s.Name] = make(chan struct{})
	}
	return m, nil
}

// Servers returns the servers that sign in, sorted by name.
func (m *Manager) Servers() []Server {
	out := make([]Server, 0, len(m.servers))
	for _, s := range m.servers {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Server) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Server returns the server of that name.
func (m *Manager) Server(name string) (Server, bool) {
	s, ok := m.servers[name]
	return s, ok
}

// ErrNotConnected is returned when a principal has not connected an
// upstream (or must connect it again).
var ErrNotConnected = errors.New("not connected")

// NotConnectedError says who must connect which upstream, and why.
type NotConnectedError struct {
	Principal, Server string
	// Reason is "" for a first connection, or why the last one no longer
	// serves (refused, more scope needed, refresh failed).
	Reason string
}

func (e *NotConnectedError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("upstream %q: not connected", e.Server)
	}
	return fmt.Sprintf("upstream %q: %s", e.Server, e.Reason)
}

func (e *NotConnectedError) Unwrap() error { return ErrNotConnected }

type principalKey struct{}

// WithPrincipal returns ctx for requests made for principal ("" is the
// anonymous or local user). The call chain sets it before a call is
// forwarded; a request without it is the gateway's own.
func WithPrincipal(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, principalKey{}, principal)
}

// Principal returns whose grant a request in ctx to server carries: ""
// for a shared server, else the principal the request is made for
// (WithPrincipal); false for the gateway's own requests.
func (m *Manager) Principal(ctx context.Context, server string) (string, bool) {
	if s, ok := m.servers[server]; ok && s.Shared {
		return "", true
	}
	p, ok := ctx.Value(principalKey{}).(string)
	return p, ok
}

// Identity returns whose grant the gateway's own requests to server carry:
// the shared grant, or the principal who connected it first among those
// still connected (a later connection does not displace them); false when
// nobody has.
func (m *Manager) Identity(ctx context.Context, server string) (string, bool) {
	s, ok := m.servers[server]
	switch {
	case !ok:
		return "", false
	case s.Shared:
		return "", true
	}
	m.mu.Lock()
	p, ok := m.lister[s.Name]
	m.mu.Unlock()
	if ok {
		return p, true
	}
	p, err := m.opts.Store.First(ctx, s.Name)
	if err != nil {
		return "", false
	}
	m.mu.Lock()
	if _, set := m.lister[s.Name]; !set {
		m.lister[s.Name] = p
	}
	m.mu.Unlock()
	return p, true
}

// unlist stops p's grant listing server, as it no longer serves: the
// next connected principal's does.
func (m *Manager) unlist(server, p string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, ok := m.lister[server]; ok && l == p {
		delete(m.lister, server)
	}
}

// principalOf returns whose grant a request in ctx to server carries: its
// principal's, or for the gateway's own requests the identity's.
func (m *Manager) principalOf(ctx context.Context, server string) (string, bool) {
	if p, ok := m.Principal(ctx, server); ok {
		return p, true
	}
	return m.Identity(ctx, server)
}

// Authorization returns the Authorization header value of a request
// carrying principal's grant of server, refreshing the grant when it is
// about to expire. It returns a *NotConnectedError when there is no usable
// grant.
func (m *Manager) Authorization(ctx context.Context, server, principal string) (string, error) {
	g, err := m.grantOf(ctx, server, principal)
	if err != nil {
		return "", err
	}
	return g.Token.Type() + " " + g.Token.AccessToken, nil
}

// Connected reports, without a network request unless a refresh is due,
// whether a request in ctx to server has a usable grant; the error is a
// *NotConnectedError when not.
func (m *Manager) Connected(ctx context.Context, server string) error {
	p, ok := m.principalOf(ctx, server)
	if !ok {
		if _, known := m.servers[server]; !known {
			return fmt.Errorf("signin: unknown server %q", server)
		}
		return &NotConnectedError{Server: server}
	}
	_, err := m.grantOf(ctx, server, p)
	return err
}

// grantOf returns principal's usable grant of server.
func (m *Manager) grantOf(ctx context.Context, server, p string) (*vault.Connection, error) {
	s, ok := m.servers[server]
	if !ok {
		return nil, fmt.Errorf("signin: unknown server %q", server)
	}
	if s.Shared {
		p = ""
	}
	k := key{p, server}
	m.mu.Lock()
	ce, cachedOK := m.cached[k]
	ch, challenged := m.challenges[k]
	m.mu.Unlock()
	if !challenged && cachedOK && time.Since(ce.at) < cacheTTL && valid(&ce.grant.Token, refreshAhead) {
		return ce.grant, nil
	}
	g, err := m.opts.Store.Get(ctx, p, server)
	switch {
	case errors.Is(err, vault.ErrNotFound):
		m.unlist(server, p)
		return nil, &NotConnectedError{Principal: p, Server: server}
	case err != nil:
		return nil, fmt.Errorf("signin: reading the connection of %q: %w", server, err)
	case g.Status != vault.Connected:
		m.unlist(server, p)
		return nil, &NotConnectedError{Principal: p, Server: server, Reason: "its connection " + statusText(g)}
	case challenged && !g.Updated.After(ch.at):
		return nil, &NotConnectedError{Principal: p, Server: server, Reason: "the upstream asks for more than this connection grants; connect again"}
	case challenged: // connected again since, here or on another replica
		m.mu.Lock()
		if m.challenges[k].at == ch.at {
			delete(m.challenges, k)
		}
		m.mu.Unlock()
	}
	if !valid(&g.Token, refreshAhead) {
		if g.Token.RefreshToken == "" {
			if !valid(&g.Token, 0) {
				return nil, &NotConnectedError{Principal: p, Server: server, Reason: "its connection expired; connect again"}
			}
		} else {
			g, err = m.opts.Store.Refresh(ctx, p, server, refreshAhead, m.refresher)
			switch {
			case err == nil:
				m.Report(server, EventRefreshed)
			case ctx.Err() != nil:
				return nil, ctx.Err()
			case errors.Is(err, vault.ErrRejected), errors.Is(err, vault.ErrRevoked):
				m.unlist(server, p)
				m.Report(server, EventRefreshFailed)
				m.opts.Logger.WarnContext(ctx, "upstream token refresh refused", "upstream", server, "principal", p, "error", text.Clip(err.Error(), 300))
				return nil, &NotConnectedError{Principal: p, Server: server, Reason: "its authorization server no longer renews the connection; connect again"}
			default:
				m.Report(server, EventRefreshFailed)
				m.opts.Logger.WarnContext(ctx, "upstream token refresh failed", "upstream", server, "principal", p, "error", text.Clip(err.Error(), 300))
				return nil, fmt.Errorf("upstream %q: renewing the connection's token failed for now (%s); try again shortly", server, text.Clip(err.Error(), 200))
			}
		}
	}
	m.remember(k, g)
	return g, nil
}

// refresher refreshes a grant's token at its token endpoint.
func (m *Manager) refresher(ctx context.Context, g *vault.Connection) (*oauth2.Token, error) {
	cfg := &oauth2.Config{ClientID: g.ClientID, ClientSecret: g.ClientSecret,
		Endpoint: oauth2.Endpoint{TokenURL: g.TokenURL, AuthStyle: oauth2.AuthStyle(g.AuthStyle)}}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, m.clientFor(ctx, g.Server))
	old := g.Token
	old.Expiry = time.Unix(1, 0) // force the refresh
	t, err := cfg.TokenSource(ctx, &old).Token()
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && (re.ErrorCode == "invalid_grant" || re.ErrorCode == "unauthorized_client" || re.ErrorCode == "invalid_client") {
		return nil, fmt.Errorf("%w: %s", vault.ErrRejected, text.Clip(re.Error(), 300))
	}
	if err != nil {
		return nil, err
	}
	if t.RefreshToken == "" {
		t.RefreshToken = g.Token.RefreshToken
	}
	return t, nil
}

func (m *Manager) remember(k key, g *vault.Connection) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.cached) >= maxCached {
		for old := range m.cached { // drop one at random
			delete(m.cached, old)
			break
		}
	}
	m.cached[k] = cacheEntry{grant: g, at: time.Now()}
}

func valid(t *oauth2.Token, ahead time.Duration) bool {
	return t != nil && t.AccessToken != "" && (t.Expiry.IsZero() || time.Until(t.Expiry) > ahead)
}

func statusText(g *vault.Connection) string {
	r := g.Reason
	if r == "" {
		r = string(g.Status)
	}
	return "is " + string(g.Status) + " (" + text.Clip(r, 200) + "); connect again"
}

// Refused records an upstream's 401 or 403 answer to a request carrying
// principal's grant: their next call is told to connect again, and that
// sign-in starts from the upstream's challenge (scope step-up). A 403 that
// is not insufficient_scope is the upstream's answer, not a sign-in
// matter.
func (m *Manager) Refused(ctx context.Context, server, p string, resp *http.Response) {
	s, ok := m.servers[server]
	if !ok || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		return
	}
	cs, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if resp.StatusCode == http.StatusForbidden && !insufficientScope(cs) {
		return
	}
	if s.Shared {
		p = ""
	}
	k := key{p, server}
	m.Report(server, EventRefused)
	if resp.StatusCode == http.StatusForbidden {
		// Too little scope for this call: the principal connects again,
		// asking for more; the grant stays for what it allows elsewhere.
		m.mu.Lock()
		if _, ok := m.challenges[k]; !ok && len(m.challenges) >= maxChallenges {
			for old := range m.challenges {
				delete(m.challenges, old)
				break
			}
		}
		m.challenges[k] = challenge{header: http.Header{"Www-Authenticate": slices.Clone(resp.Header.Values("WWW-Authenticate"))}, at: time.Now()}
		delete(m.cached, k)
		m.mu.Unlock()
		m.opts.Logger.InfoContext(ctx, "upstream asks for more scope", "upstream", server, "principal", p)
		return
	}
	// 401: the grant is revoked or no longer valid. It is marked so in
	// the store (every replica sees it), and no longer lists the
	// upstream: whoever connected it next does.
	m.mu.Lock()
	delete(m.cached, k)
	m.mu.Unlock()
	m.unlist(server, p)
	if err := m.opts.Store.Mark(context.WithoutCancel(ctx), p, server, vault.Revoked, "the upstream refused its token (HTTP 401)"); err != nil && !errors.Is(err, vault.ErrNotFound) {
		m.opts.Logger.WarnContext(ctx, "marking a refused connection", "upstream", server, "principal", p, "error", text.Clip(err.Error(), 300))
	}
	m.opts.Logger.InfoContext(ctx, "upstream refused a connection's token", "upstream", server, "principal", p)
}

// Report passes event of server to [Options.OnEvent]; the Manager reports
// its own events, and a caller those only it sees (EventNotConnected).
func (m *Manager) Report(server, event string) {
	if m.opts.OnEvent != nil {
		m.opts.OnEvent(server, event)
	}
}

func insufficientScope(cs []oauthex.Challenge) bool {
	for _, c := range cs {
		if c.Params["error"] == "insufficient_scope" {
			return true
		}
	}
	return false
}

// Ready returns a channel closed when a principal next connects server:
// the gateway's own connection, waiting for a grant to list with, tries
// again then.
func (m *Manager) Ready(server string) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ready[server]
}

// Disconnect forgets principal's grant of server.
func (m *Manager) Disconnect(ctx context.Context, principal, server string) error {
	s, ok := m.servers[server]
	if !ok {
		return fmt.Errorf("signin: unknown server %q", server)
	}
	if s.Shared {
		principal = ""
	}
	k := key{principal, server}
	m.mu.Lock()
	delete(m.cached, k)
	delete(m.challenges, k)
	m.mu.Unlock()
	m.unlist(server, principal)
	err := m.opts.Store.Delete(ctx, principal, server)
	if errors.Is(err, vault.ErrNotFound) {
		return nil
	}
	return err
}

// validCallback reports whether u is an absolute http(s) URL.
func validCallback(u string) bool {
	p, err := url.Parse(u)
	return err == nil && (p.Scheme == "https" || p.Scheme == "http") && p.Host != ""
}

// Grants returns principal's connections by server, and the shared ones
// (of shared servers) under their servers too, without their secrets.
func (m *Manager) Grants(ctx context.Context, principal string) (map[string]vault.Summary, error) {
	out := map[string]vault.Summary{}
	mine, err := m.opts.Store.List(ctx, principal)
	if err != nil {
		return nil, err
	}
	for _, g := range mine {
		if s, ok := m.servers[g.Server]; ok && !s.Shared {
			out[g.Server] = g
		}
	}
	if principal != "" {
		if mine, err = m.opts.Store.List(ctx, ""); err != nil {
			return nil, err
		}
	}
	for _, g := range mine {
		if s, ok := m.servers[g.Server]; ok && s.Shared {
			out[g.Server] = g
		}
	}
	return out, nil
}

// Close ends the sign-ins under way and closes idle connections.
func (m *Manager) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, f := range m.flows {
		if f.cancel != nil {
			f.cancel()
		}
	}
	for _, c := range m.clients {
		c.CloseIdleConnections()
	}
	return nil
}
