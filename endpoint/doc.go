// Package endpoint serves one MCP server to clients of both protocol eras.
//
// The MCP specification changed shape in 2026-07-28: there is no
// initialize handshake and no Mcp-Session-Id any more, every request carries
// its protocol version and client capabilities in _meta, and the client
// mirrors the version in the MCP-Protocol-Version HTTP header. Clients of
// 2025-11-25 and older still open a session with initialize and carry
// Mcp-Session-Id from then on.
//
// The official Go SDK (github.com/modelcontextprotocol/go-sdk) speaks both
// eras, but over HTTP it serves 2026-07-28 only from a stateless
// [mcp.StreamableHTTPHandler] and the legacy handshake only from a stateful
// one. [NewHandler] puts one [*mcp.Server] behind both and routes each
// request by its MCP-Protocol-Version header:
//
//   - a well-formed version (YYYY-MM-DD) at or after 2026-07-28 goes to the
//     stateless handler;
//   - any other header value, including a malformed one, goes to the stateful
//     handler, which answers it as the SDK does (400 for an unknown version);
//   - a POST without the header and without Mcp-Session-Id is peeked at: if
//     its JSON body carries _meta["io.modelcontextprotocol/protocolVersion"]
//     at or after 2026-07-28, it goes to the stateless handler, which rejects
//     it with -32020 (the header is required in that era) instead of the
//     stateful handler's misleading "unsupported version";
//   - every other request without the header, notably the legacy initialize
//     request, goes to the stateful handler.
//
// The SDK client (mcp.Client with mcp.StreamableClientTransport) sends the
// header on every request of a 2026-07-28 connection, starting with
// server/discover, and on every legacy request after initialize; its
// initialize request carries no header. So for the SDK client the body is
// peeked at only once per legacy connection.
//
// A JSON array (a batch, which protocol 2025-06-18 removed) is answered
// with -32600 before any routing, as [ServeStdio] answers it on a line.
//
// Resources are bounded by default. A legacy session closes after
// [DefaultSessionTimeout] without a request ([Options.SessionTimeout]), and
// at most [DefaultMaxSessions] are open at once ([Options.MaxSessions]):
// past the cap, a request that would open another gets HTTP 503 and
// [CodeTooManySessions]. One user (the auth.TokenInfo's UserID) has at most
// [DefaultMaxSessionsPerUser] ([Options.MaxSessionsPerUser]), past which
// HTTP 429 and the same code. A session is its opener's: another user's
// request naming it is answered 404, as for an unknown session, before
// anything acts on it ([Handler.Guard] puts that check in front of other
// handlers). [Handler.Sessions] counts them.
//
// [Serve] and [ListenAndServe] run such a handler at [Path] with read and
// idle timeouts ([ServeWith] sets them) and a graceful shutdown when their
// context ends; [ServeStdio] runs a server over stdin and stdout, where the
// SDK handles both eras without help.
package endpoint
