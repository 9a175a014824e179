package stage

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
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
	// Wait bounds how long a call asked to connect within itself waits
	// for it. Zero means DefaultConnectWait.
	Wait time.Duration
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
	if link := s.link(server); link != "" && c.Method == call.ToolsCall && approval.SupportsURL(c.Client.Capabilities) {
		return s.askToConnect(ctx, c, nc, link, next)
	}
	return s.refuse(c, nc)
}

// refuse ends a call whose principal must connect the upstream first.
func (s *SignIn) refuse(c *call.Call, nc *signin.NotConnectedError) (json.RawMessage, error) {
	c.Outcome = "not_connected"
	s.Manager.Report(nc.Server, signin.EventNotConnected)
	msg := s.notConnected(nc)
	if c.Method == call.ToolsCall {
		return call.ToolError(msg), nil
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}
}

// SignInInputKey is the key of the URL elicitation that asks a user to
// connect an upstream, in an input_required result and its answer.
const SignInInputKey = "preflight/connect"

// recheck is how often a call waiting for its user to connect looks in the
// vault, where a connection made on another replica shows.
const recheck = 5 * time.Second

// DefaultConnectWait bounds how long a call asked within itself (a
// 2025-11-25 client) waits for its user to connect the upstream.
const DefaultConnectWait = 5 * time.Minute

// askToConnect asks a client that declared URL elicitation to open the
// page's link to connect the upstream: within the call (the call goes on
// once the user has connected it), or in a later round (the client
// retries with its answer, and the call goes on if the upstream is
// connected by then).
func (s *SignIn) askToConnect(ctx context.Context, c *call.Call, nc *signin.NotConnectedError, link string, next call.Handler) (json.RawMessage, error) {
	server := c.Upstream.Name()
	if answer, ok := c.InputResponses[SignInInputKey]; ok {
		rest := maps.Clone(c.InputResponses)
		delete(rest, SignInInputKey)
		if len(rest) == 0 {
			rest = nil
		}
		c.InputResponses = rest
		if er, ok := answer.(*mcp.ElicitResult); ok && er.Action != "accept" {
			return s.refuse(c, nc)
		}
		if s.Manager.Connected(ctx, server) == nil {
			return next.Serve(ctx, c)
		}
	}
	p := &mcp.ElicitParams{Mode: "url", URL: link, ElicitationID: "connect-" + rand.Text(),
		Message: fmt.Sprintf("Upstream %q acts with your own account: connect it on the gateway's page (sign in, then follow its authorization server), and the call goes on.", server)}
	res, err := c.Client.Conn.Ask(ctx, "elicitation/create", p)
	switch {
	case errors.Is(err, call.ErrRound):
		qs, err := call.Questions(mcp.InputRequestMap{SignInInputKey: p})
		if err != nil {
			return nil, internal("encoding the sign-in question: %v", err)
		}
		c.Outcome = "input_required"
		return call.InputRequired(qs, ""), nil
	case err != nil:
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return s.refuse(c, nc)
	}
	if er, _ := res.(*mcp.ElicitResult); er == nil || er.Action != "accept" {
		return s.refuse(c, nc)
	}
	wait := s.Wait
	if wait <= 0 {
		wait = DefaultConnectWait
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		ready := s.Manager.Ready(server)
		if s.Manager.Connected(ctx, server) == nil {
			c.Client.Conn.Completed(ctx, p.ElicitationID)
			return next.Serve(ctx, c)
		}
		select {
		case <-ready:
		case <-time.After(recheck): // a connection made on another replica
		case <-wctx.Done():
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return s.refuse(c, nc)
		}
	}
}

// link is the page's link to connect server, "" without a page.
func (s *SignIn) link(server string) string {
	if s.PageURL == nil {
		return ""
	}
	base := s.PageURL()
	if base == "" {
		return ""
	}
	return base + "/connections/" + url.PathEscape(server) + "/connect"
}

// notConnected tells the user what to do.
func (s *SignIn) notConnected(e *signin.NotConnectedError) string {
	why := "you have not connected it yet"
	if e.Reason != "" {
		why = e.Reason
	}
	link := s.link(e.Server)
	if link == "" {
		return fmt.Sprintf("Not run: upstream %q signs in with your own account, and %s. Connect it on the gateway's page (Connections), then call again. The server was not called.", e.Server, why)
	}
	return fmt.Sprintf("Not run: upstream %q signs in with your own account, and %s. Open %s to connect it, then call again. The server was not called.", e.Server, why, link)
}
