package stage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/signin"
)

// SignIn gives the requests of a call to an upstream that signs in with
// OAuth the principal they are made for, and answers a call whose
// principal has not connected that upstream with the page's link to
// connect it: a tool error (the upstream was not called), as for an
// approval. Calls to other upstreams pass untouched.
type SignIn struct {
	Manager *signin.Manager
	// PageURL returns the page's URL; "" when there is none.
	PageURL func() string
}

// Name implements call.Stage.
func (*SignIn) Name() string { return "signin" }

// Serve implements call.Stage.
func (s *SignIn) Serve(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	if c.Upstream == nil {
		return next.Serve(ctx, c)
	}
	server := c.Upstream.Name()
	if _, ok := s.Manager.Server(server); !ok {
		return next.Serve(ctx, c)
	}
	ctx = signin.WithPrincipal(ctx, c.Client.Principal)
	c.SignedInAs = c.Client.Principal
	if srv, _ := s.Manager.Server(server); srv.Shared {
		c.SignedInAs = "shared"
	} else if c.SignedInAs == "" {
		c.SignedInAs = "local" // the anonymous or stdio user
	}
	err := s.Manager.Connected(ctx, server)
	var nc *signin.NotConnectedError
	switch {
	case err == nil:
		res, err := next.Serve(ctx, c)
		if err == nil || !errors.As(s.Manager.Connected(ctx, server), &nc) {
			return res, err
		}
		// The upstream refused the grant (revoked, or too little scope
		// for this call): the caller connects again.
	case !errors.As(err, &nc):
		return nil, internal("%v", err)
	}
	c.Outcome = "not_connected"
	msg := s.notConnected(nc)
	if c.Method == call.ToolsCall {
		return call.ToolError(msg), nil
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}
}

// notConnected tells the user what to do.
func (s *SignIn) notConnected(e *signin.NotConnectedError) string {
	why := "you have not connected it yet"
	if e.Reason != "" {
		why = e.Reason
	}
	link := ""
	if s.PageURL != nil {
		if base := s.PageURL(); base != "" {
			link = base + "/connections/" + url.PathEscape(e.Server) + "/connect"
		}
	}
	if link == "" {
		return fmt.Sprintf("Not run: upstream %q signs in with your own account, and %s. Connect it on the gateway's page (Connections), then call again. The server was not called.", e.Server, why)
	}
	return fmt.Sprintf("Not run: upstream %q signs in with your own account, and %s. Open %s to connect it, then call again. The server was not called.", e.Server, why, link)
}
