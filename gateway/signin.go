package gateway

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/preflightmcp/preflight/gateway/internal/signin"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
)

// newSignIn makes the sign-in manager of the upstreams with OAuth, if any.
func (g *Gateway) newSignIn(o *Options) error {
	servers := signInServers(o.Upstreams)
	if len(servers) == 0 {
		return nil
	}
	if o.Vault == nil {
		return errors.New("gateway: an upstream signs in with OAuth, and Options.Vault is nil: the grants need a vault")
	}
	if o.Page == nil {
		return errors.New("gateway: an upstream signs in with OAuth, and there is no page (Options.Page) for people to connect it on")
	}
	m, err := signin.New(servers, signin.Options{Store: o.Vault, Logger: g.logger,
		CallbackURL: func() string { return signin.CallbackURL(g.PageURL()) },
		OnEvent:     func(server, event string) { g.metrics.SignIn(server, event) }})
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	g.signIn = m
	return nil
}

// signInServers returns the upstreams with OAuth, as package signin takes
// them, sorted by name.
func signInServers(us []UpstreamSpec) []signin.Server {
	var out []signin.Server
	for _, u := range us {
		if o := u.OAuth; o != nil {
			out = append(out, signin.Server{Name: u.Name, URL: u.URL, Shared: o.Shared,
				ClientID: o.ClientID, ClientSecret: o.ClientSecret, Issuer: o.Issuer, Scopes: o.Scopes, ClientMetadataURL: o.ClientMetadataURL})
		}
	}
	slices.SortFunc(out, func(a, b signin.Server) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// spec returns u's connection spec, with the sign-in of an upstream with
// OAuth.
func (g *Gateway) spec(u UpstreamSpec) upstream.Spec {
	s := u.spec()
	if u.OAuth != nil && g.signIn != nil {
		s.SignIn = g.signIn
		s.ToolsOnly = !u.OAuth.Shared
	}
	return s
}

// sameSignIn reports whether us sign in as the gateway's upstreams do.
func (g *Gateway) sameSignIn(us []UpstreamSpec) bool {
	now := signInServers(us)
	if g.signIn == nil {
		return len(now) == 0
	}
	return slices.EqualFunc(now, g.signIn.Servers(), func(a, b signin.Server) bool {
		return a.Name == b.Name && a.URL == b.URL && a.Shared == b.Shared && a.ClientID == b.ClientID &&
			a.ClientSecret == b.ClientSecret && a.Issuer == b.Issuer && slices.Equal(a.Scopes, b.Scopes) && a.ClientMetadataURL == b.ClientMetadataURL
	})
}
