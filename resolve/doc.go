// Package resolve implements tool resolution (tools/resolve) for Go MCP
// servers and clients, in both of its shapes: the SEP-1862 seed shape
// ({tool: <complete Tool>}, capabilities.tools.resolve, Tool.resolve) and
// the io.modelcontextprotocol/tool-resolution extension shape (a
// metadata-only result, a _meta marker, the extension id in
// capabilities.extensions).
//
// # Server
//
// [NewServer] installs tools/resolve and the markers on an [mcp.Server].
// A tool becomes resolvable when it is added through [AddTool] (typed) or
// [Server.AddTool] (raw) with a [Resolver]: a declarative [Table] keyed by
// one argument's value, from which the tool's static annotations and hints
// are derived, or any [ResolverFunc]. A resolver gets the call's name and
// arguments and a [Caller], a read-only view of who asks: it cannot reach
// the client.
//
// Every request is answered in the shape it negotiated: a request that
// declares the extension (per request under 2026-07-28, in initialize on a
// legacy session) gets the extension's result and markers; any other gets
// the seed's. In the extension shape the resolved policy hints travel as
// one object under _meta["mcp.dev/policy-hints"], sent only to a request
// that declared that key as an extension; tool definitions keep the
// scalar mcp.dev/ keys.
// Params that do not decode get -32602 naming the field, arguments are
// validated against the tool's input schema, resolver errors and panics
// become -32603 while the server keeps serving, and a resolution riskier
// than the static declaration ([hints.Exceeds]) is never sent, whether
// computed afresh or remembered from earlier in the session.
//
// # Client
//
// [NewClient] returns an [mcp.Client] that declares the extension and can
// send tools/resolve; [Preflight] resolves one call before it is made and
// returns a [Decision]: the effective annotations and hints with where
// each came from, whether the call needs confirmation and whether it is
// safe to retry, following the seed's client rules and the extension's
// error table. A resolved call is described by its resolution alone (see
// [github.com/preflightmcp/preflight/policy.Evaluate]); the static declaration counts only for a call that
// was not resolved. It holds every resolution to the same bounds as the
// server ([hints.Exceeds]).
package resolve
