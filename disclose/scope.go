package disclose

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// KeyFunc returns the scope key of a request: whose authorization state a
// tool_descriptions read grants to and a tools/call is checked against.
// ok false means the request has no identity; [Options.Anonymous] says
// what happens then. A KeyFunc replaces [DefaultKey] entirely; it may call
// it. Keys returned by a KeyFunc are kept until they expire
// ([Options.TTL]); they are not tied to a session's end.
type KeyFunc func(ctx context.Context, req mcp.Request) (key string, ok bool)

// Key prefixes of [DefaultKey]; a store sees them as they are.
const (
	KeyPrefixSession    = "session:"
	KeyPrefixConnection = "connection:"
	KeyPrefixPrincipal  = "principal:"
	// KeyAnonymous is the one scope shared by requests with no identity
	// under [AnonymousShared].
	KeyAnonymous = "anonymous"
)

// DefaultKey is the scope key used unless [Options.Key] is set:
//
//   - a request in an MCP session with an id (legacy streamable HTTP,
//     2025-11-25 and older): "session:" + the session id, as seed 004
//     section 5.2 asks; the state is forgotten when the session ends;
//   - a request on a connection that is not HTTP (stdio, in-memory; either
//     era): "connection:" + a random id given to the connection; forgotten
//     when it closes;
//   - a sessionless HTTP request (2026-07-28) from an authenticated
//     principal (a bearer token whose verifier set
//     [github.com/modelcontextprotocol/go-sdk/auth.TokenInfo].UserID):
//     "principal:" + the user id, shared by every request and replica
//     serving that principal until it expires;
//   - anything else has no identity (ok false).
func DefaultKey(_ context.Context, req mcp.Request) (string, bool) {
	sc, ok := defaultScope(req)
	return sc.key, ok
}

// scope is a resolved scope key; session is set when the state belongs to
// one session or connection and ends with it.
type scope struct {
	key     string
	session *mcp.ServerSession
}

func defaultScope(req mcp.Request) (scope, bool) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	extra := req.GetExtra()
	if ss != nil {
		if id := ss.ID(); id != "" {
			return scope{key: KeyPrefixSession + id, session: ss}, true
		}
		if extra == nil || extra.Header == nil {
			return scope{key: KeyPrefixConnection + connectionID(ss), session: ss}, true
		}
	}
	if extra != nil && extra.TokenInfo != nil && extra.TokenInfo.UserID != "" {
		return scope{key: KeyPrefixPrincipal + extra.TokenInfo.UserID}, true
	}
	return scope{}, false
}

// processSalt makes connection keys unique across processes that share a
// store.
var processSalt = func() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}()

// connectionID names a connection without a session id: the process's
// salt and the session's address, unique while the session is alive. A
// [Server] forgets the state when the connection ends, before the address
// can be reused.
func connectionID(ss *mcp.ServerSession) string {
	return fmt.Sprintf("%s-%p", processSalt, ss)
}

// AnonymousPolicy says what a request without identity (no session, no
// connection, no principal: an unauthenticated 2026-07-28 HTTP request
// under [DefaultKey]) gets.
type AnonymousPolicy int

const (
	// AnonymousShared, the default, puts every request without identity
	// in one shared scope ([KeyAnonymous]): a description fetched by any
	// of them authorizes the tool for all of them, until it expires.
	// The workflow is enforced for the deployment as a whole, and
	// isolation between clients does not hold: authenticate clients, or
	// give a [KeyFunc], to get it back.
	AnonymousShared AnonymousPolicy = iota
	// AnonymousOpen lets calls without identity through unchecked (reads
	// still serve descriptions). Nothing is enforced for them.
	AnonymousOpen
)
