package signin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/gateway/internal/vault"
)

// flow is one sign-in under way: the go-sdk's handler runs in its own
// goroutine, waiting in its code fetcher for the browser to come back.
type flow struct {
	principal, server string
	authURL           chan string                    // the fetcher's URL (1)
	result            chan *auth.AuthorizationResult // the callback's code (1)
	refused           chan error                     // the callback's error (1)
	done              chan error                     // Authorize's outcome (1)
	cfg               *oauth2.Config                 // set by NewTokenSource
	token             *oauth2.Token                  // set by NewTokenSource
	cancel            context.CancelFunc
}

// ErrUnknownFlow is returned by Complete for a state no sign-in under way
// has (it lapsed, was answered already, or never was).
var ErrUnknownFlow = errors.New("this sign-in is unknown or has lapsed; start it again")

// Begin starts principal's sign-in to server and returns the
// authorization server's URL to send their browser to.
func (m *Manager) Begin(ctx context.Context, principal, server string) (string, error) {
	s, ok := m.servers[server]
	if !ok {
		return "", fmt.Errorf("signin: unknown server %q", server)
	}
	if s.Shared {
		principal = "" // one grant for everybody
	}
	k := key{principal, server}
	// A slot of the bounds is taken now, and given back when the
	// sign-in ends (completed, refused or lapsed).
	m.mu.Lock()
	if m.underWay >= m.opts.MaxFlows || m.underWayBy[principal] >= m.opts.MaxFlowsPerPrincipal {
		m.mu.Unlock()
		return "", errors.New("too many sign-ins under way; finish or wait for one to lapse")
	}
	m.underWay++
	m.underWayBy[principal]++
	ch := m.challenges[k]
	m.mu.Unlock()
	ended := false
	end := func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if !ended {
			ended = true
			m.underWay--
			if m.underWayBy[principal]--; m.underWayBy[principal] <= 0 {
				delete(m.underWayBy, principal)
			}
		}
	}

	callback := m.opts.CallbackURL()
	if !validCallback(callback) {
		end()
		return "", fmt.Errorf("signin: the page's callback %q is not an absolute http(s) URL", callback)
	}
	f := &flow{principal: principal, server: server, authURL: make(chan string, 1),
		result: make(chan *auth.AuthorizationResult, 1), refused: make(chan error, 1), done: make(chan error, 1)}
	h, err := auth.NewAuthorizationCodeHandler(m.handlerConfig(ctx, s, principal, callback, f))
	if err != nil {
		end()
		return "", fmt.Errorf("signin: %w", err)
	}
	req, resp, err := m.challenge(ctx, s, ch.header)
	if err != nil {
		end()
		return "", err
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.opts.FlowTimeout)
	f.cancel = cancel
	go func() {
		err := h.Authorize(fctx, req, resp)
		if err == nil {
			err = m.keep(fctx, s, f)
		}
		end() // before the outcome is told: the principal may start again at once
		f.done <- err
	}()
	select {
	case u := <-f.authURL:
		return u, nil
	case err := <-f.done:
		cancel()
		return "", fmt.Errorf("signing in to %q: %w", server, err)
	case <-ctx.Done():
		cancel()
		return "", ctx.Err()
	}
}

// handlerConfig configures the go-sdk's handler for one sign-in.
func (m *Manager) handlerConfig(ctx context.Context, s Server, principal, callback string, f *flow) *auth.AuthorizationCodeHandlerConfig {
	c := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:         callback,
		RequestRefreshToken: true,
		Client:              m.clientFor(ctx, s.Name),
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs:            []string{callback},
			ClientName:              m.opts.ClientName,
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ResponseTypes:           []string{"code"},
			TokenEndpointAuthMethod: "none",
		}},
		AuthorizationCodeFetcher: func(ctx context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			return m.fetch(ctx, f, a)
		},
		NewTokenSource: func(ctx context.Context, cfg *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			f.cfg, f.token = cfg, t
			return oauth2.StaticTokenSource(t), nil
		},
	}
	if u := clientMetadataURL(s, callback); u != "" {
		c.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: u}
	}
	if s.ClientID != "" {
		c.PreregisteredClient = &oauthex.ClientCredentials{ClientID: s.ClientID, Issuer: s.Issuer}
		if s.ClientSecret != "" {
			c.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: s.ClientSecret}
		}
	}
	// Step-up keeps what was granted before: the scopes asked for are
	// the union of the upstream's challenge, the configured ones and the
	// principal's earlier grant.
	var before []string
	if g, err := m.opts.Store.Get(ctx, principal, s.Name); err == nil {
		before = strings.Fields(g.Scopes)
	}
	c.ScopeFilter = func(found []string) []string {
		out := slices.Clone(found)
		for _, sc := range slices.Concat(s.Scopes, before) {
			if sc != "" && sc != "offline_access" && !slices.Contains(out, sc) {
				out = append(out, sc)
			}
		}
		return out
	}
	return c
}

// challenge returns the failed request and response the handler starts
// from: the upstream's last refusal of this principal, or a fresh one (an
// unauthenticated request of each era, server/discover then initialize,
// until one is refused with 401); a server that refuses neither still gets
// a 401 without a challenge, so that discovery falls back to the
// protected-resource metadata at the server's well-known URL.
func (m *Manager) challenge(ctx context.Context, s Server, refused http.Header) (*http.Request, *http.Response, error) {
	resp := &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}, Body: http.NoBody}
	req, err := probe(ctx, s.URL, probes[0])
	if err != nil {
		return nil, nil, fmt.Errorf("signin: %w", err)
	}
	if refused != nil {
		resp.Header = refused.Clone()
		if insufficient(refused) {
			resp.StatusCode = http.StatusForbidden
		}
		return req, resp, nil
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, p := range probes {
		r, err := probe(pctx, s.URL, p)
		if err != nil {
			return nil, nil, fmt.Errorf("signin: %w", err)
		}
		got, err := m.clientFor(ctx, s.Name).Do(r)
		if err != nil {
			return nil, nil, fmt.Errorf("signin: reaching %q: %w", s.Name, err)
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(got.Body, 64<<10))
		got.Body.Close()
		if got.StatusCode == http.StatusUnauthorized {
			resp.Header = http.Header{"Www-Authenticate": got.Header.Values("WWW-Authenticate")}
			break
		}
	}
	return req, resp, nil
}

// probes are the requests whose refusal tells how to sign in, one per era.
var probes = []struct{ method, version, body string }{
	{"server/discover", "2026-07-28", `{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"preflight","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}}}`},
	{"initialize", "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"preflight","version":"0"}}}`},
}

func probe(ctx context.Context, url string, p struct{ method, version, body string }) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(p.body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if p.version != "" {
		req.Header.Set("Mcp-Protocol-Version", p.version)
		req.Header.Set("Mcp-Method", p.method)
	}
	return req, nil
}

func insufficient(h http.Header) bool {
	cs, _ := oauthex.ParseWWWAuthenticate(h.Values("WWW-Authenticate"))
	return insufficientScope(cs)
}

// fetch is the handler's code fetcher: it hands the authorization URL to
// Begin and waits for Complete.
func (m *Manager) fetch(ctx context.Context, f *flow, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	u, err := url.Parse(a.URL)
	if err != nil {
		return nil, err
	}
	state := u.Query().Get("state")
	if state == "" {
		return nil, errors.New("the authorization URL has no state")
	}
	m.mu.Lock()
	m.flows[state] = f
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.flows, state)
		m.mu.Unlock()
	}()
	f.authURL <- a.URL
	select {
	case r := <-f.result:
		return r, nil
	case err := <-f.refused:
		return nil, err
	case <-ctx.Done():
		return nil, fmt.Errorf("the sign-in was not completed within %v", m.opts.FlowTimeout)
	}
}

// keep stores what a sign-in granted.
func (m *Manager) keep(ctx context.Context, s Server, f *flow) error {
	if f.cfg == nil || f.token == nil {
		return errors.New("the authorization server granted no token")
	}
	scopes := f.cfg.Scopes
	if sc, ok := f.token.Extra("scope").(string); ok && sc != "" {
		scopes = strings.Fields(sc)
	}
	g := &vault.Connection{Principal: f.principal, Server: s.Name, Token: *f.token, Scopes: strings.Join(scopes, " "),
		TokenURL: f.cfg.Endpoint.TokenURL, AuthStyle: int(f.cfg.Endpoint.AuthStyle), Issuer: issuerOf(f.cfg.Endpoint.AuthURL),
		ClientID: f.cfg.ClientID, ClientSecret: f.cfg.ClientSecret, Status: vault.Connected}
	if err := m.opts.Store.Put(ctx, g); err != nil {
		return fmt.Errorf("keeping the connection: %w", err)
	}
	k := key{f.principal, s.Name}
	m.mu.Lock()
	delete(m.challenges, k)
	m.cached[k] = cacheEntry{grant: g, at: time.Now()}
	if _, ok := m.lister[s.Name]; !ok && !s.Shared {
		m.lister[s.Name] = f.principal // the first to connect lists it
	}
	close(m.ready[s.Name])
	m.ready[s.Name] = make(chan struct{})
	m.mu.Unlock()
	m.Report(s.Name, EventConnected)
	m.opts.Logger.InfoContext(ctx, "upstream connected for a principal", "upstream", s.Name, "principal", f.principal, "scopes", strings.Join(scopes, " "))
	return nil
}

// clientMetadataURL is the client ID metadata document s is signed in
// with: its own, or the page's when the page is served over https (the
// go-sdk takes only https ones); "" for none.
func clientMetadataURL(s Server, callback string) string {
	if s.ClientMetadataURL != "" {
		return s.ClientMetadataURL
	}
	if base, ok := strings.CutSuffix(callback, callbackPath); ok && strings.HasPrefix(base, "https://") {
		return base + ClientMetadataPath
	}
	return ""
}

// ClientMetadata returns the gateway's client ID metadata document, served
// at its URL, for the page whose callback is callback.
func (m *Manager) ClientMetadata() ([]byte, error) {
	callback := m.opts.CallbackURL()
	base, _ := strings.CutSuffix(callback, callbackPath)
	return json.Marshal(map[string]any{
		"client_id":                  base + ClientMetadataPath,
		"client_name":                m.opts.ClientName,
		"redirect_uris":              []string{callback},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
	})
}

// callbackPath is where, under the page's URL, the authorization server
// sends the browser back.
const callbackPath = "/connections/callback"

// CallbackURL returns the callback of a page served at pageURL.
func CallbackURL(pageURL string) string { return pageURL + callbackPath }

func issuerOf(authURL string) string {
	u, err := url.Parse(authURL)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// Complete finishes a sign-in from the authorization server's redirect
// (its query), and returns the principal and server it connected. The
// caller must have checked that the browser bringing the redirect is the
// one that was sent (the page binds a cookie to the state): the state
// alone names the flow.
func (m *Manager) Complete(ctx context.Context, q url.Values) (principal, server string, err error) {
	state := q.Get("state")
	m.mu.Lock()
	f := m.flows[state]
	delete(m.flows, state) // a sign-in takes one answer: this one
	m.mu.Unlock()
	if f == nil || state == "" {
		return "", "", ErrUnknownFlow
	}
	// The flow's only answer: its channels have room for it.
	if e := q.Get("error"); e != "" {
		msg := e
		if d := q.Get("error_description"); d != "" {
			msg += ": " + d
		}
		f.refused <- fmt.Errorf("the authorization server refused: %s", text.Clip(msg, 300))
	} else {
		f.result <- &auth.AuthorizationResult{Code: q.Get("code"), State: state, Iss: q.Get("iss")}
	}
	select {
	case err := <-f.done:
		f.cancel()
		if err != nil {
			m.opts.Logger.WarnContext(ctx, "upstream sign-in failed", "upstream", f.server, "principal", f.principal, "error", text.Clip(err.Error(), 300))
			return f.principal, f.server, fmt.Errorf("signing in to %q: %w", f.server, err)
		}
		return f.principal, f.server, nil
	case <-ctx.Done():
		return f.principal, f.server, ctx.Err()
	}
}
