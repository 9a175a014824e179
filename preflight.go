// Package preflight is the wire vocabulary of the MCP extensions this module
// implements, shared by every other package: the tools/resolve method in both
// of its shapes (the SEP-1862 seed shape and the
// io.modelcontextprotocol/tool-resolution extension shape), the four
// standard behaviour annotations with their core defaults and monotonic
// bounds, and the _meta keys of the mcp.dev/ policy hints.
//
// It holds types and constants only; behaviour lives in the packages that
// import it: [github.com/preflightmcp/preflight/hints] reads and writes
// policy hints, [github.com/preflightmcp/preflight/policy] turns annotations
// and hints into decisions, and [github.com/preflightmcp/preflight/resolve]
// serves and calls tools/resolve.
package preflight

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Method and extension identifiers.
const (
	// MethodResolve is the JSON-RPC method of tool resolution, the same in
	// both shapes.
	MethodResolve = "tools/resolve"
	// ExtensionToolResolution is the extension identifier declared in
	// capabilities.extensions by clients and servers that speak the
	// extension shape of tool resolution, and the _meta key of the
	// per-tool resolvable marker.
	ExtensionToolResolution = "io.modelcontextprotocol/tool-resolution"
	// ProtocolStateless is the first protocol revision without sessions.
	// Requests at this version carry their capabilities in _meta.
	ProtocolStateless = "2026-07-28"
	// ProtocolLegacy is the newest protocol revision with the initialize
	// handshake and sessions.
	ProtocolLegacy = "2025-11-25"
)

// Policy-hint keys in a tool's or a resolution's _meta (seed 002).
const (
	MetaEffect               = "mcp.dev/effect"
	MetaIdempotent           = "mcp.dev/idempotent"
	MetaRequiresConfirmation = "mcp.dev/requiresConfirmation"
	MetaResultSensitivity    = "mcp.dev/resultSensitivity"
)

// Extension keys of the extension shape's result _meta. The
// tool-resolution extension admits in a result's _meta only objects owned
// by extensions the client declared on the request, so each of these is
// also an extension identifier: a client declares it in
// capabilities.extensions with empty settings ({}), and a server sends the
// key only to a request that declared it.
const (
	// MetaPolicyHints carries a resolution's policy hints as one object
	// with the seed 002 names unprefixed:
	// {"effect": "read", "idempotent": true, "requiresConfirmation": false,
	// "resultSensitivity": "public"}. Tool definitions and the seed shape
	// keep the scalar mcp.dev/ keys above.
	MetaPolicyHints = "mcp.dev/policy-hints"
	// MetaSecuritySchemes carries a resolution's authorization
	// requirements (SEP-1488 shape) as {"securitySchemes": [...]}. In the
	// seed shape they are the returned tool's top-level securitySchemes
	// field.
	MetaSecuritySchemes = "mcp.dev/security-schemes"
)

// JSON-RPC error codes used by tool resolution.
const (
	CodeMethodNotFound    = -32601
	CodeInvalidParams     = -32602
	CodeInternalError     = -32603
	CodeMissingCapability = -32021
)

// ResultTypeComplete is the resultType of every successful tools/resolve
// result in the extension shape and of every result under 2026-07-28.
const ResultTypeComplete = "complete"

// ResolveParams are the parameters of tools/resolve, identical in both
// shapes. Arguments must be the complete arguments of the intended
// tools/call; a nil map means the field was missing (send an empty map for a
// tool without arguments).
type ResolveParams struct {
	mcp.ParamsBase
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// ResolveResult is the result of tools/resolve in either shape. A server
// fills exactly one of them:
//
//   - the extension shape: ResultType "complete", Name, Annotations (all four
//     hints) and optional _meta;
//   - the seed shape: Tool, the complete tool definition with refined
//     annotations and, in its _meta, refined policy hints.
//
// A client tells them apart with [ResolveResult.SeedShape].
type ResolveResult struct {
	mcp.ResultBase
	ResultType  string       `json:"resultType,omitempty"`
	Name        string       `json:"name,omitempty"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Tool        *Tool        `json:"tool,omitempty"`
}

// SeedShape reports whether r is in the seed shape ({tool: ...}).
func (r *ResolveResult) SeedShape() bool { return r.Tool != nil }

// Tool is a tool definition as it travels in the seed shape: the SDK's tool
// plus the top-level fields SEP-1862 and SEP-1488 add to it.
type Tool struct {
	*mcp.Tool
	// Resolve marks a tool that answers tools/resolve (seed shape).
	Resolve bool `json:"resolve,omitempty"`
	// SecuritySchemes are the authorization requirements of the resolved
	// call (SEP-1488 shape), present only when a resolution sets them.
	SecuritySchemes []SecurityScheme `json:"securitySchemes,omitempty"`
}

// SecurityScheme is one authorization requirement in the SEP-1488 shape:
// {"type":"noauth"} for public data, {"type":"oauth2","scopes":[...]} for
// data behind OAuth scopes.
type SecurityScheme struct {
	Type   string   `json:"type"`
	Scopes []string `json:"scopes,omitempty"`
}

// ResolvableMarker is the value of the extension's per-tool marker,
// Tool._meta["io.modelcontextprotocol/tool-resolution"].
func ResolvableMarker() map[string]any { return map[string]any{"resolvable": true} }

// IsResolvable reports whether a tool, as a client received it, carries the
// extension's resolvable marker in its _meta. The seed's top-level
// "resolve": true does not survive decoding into [mcp.Tool]; clients that
// need it decode the raw tools/list result into [Tool].
func IsResolvable(t *mcp.Tool) bool {
	if t == nil {
		return false
	}
	m, ok := t.Meta[ExtensionToolResolution].(map[string]any)
	if !ok {
		return false
	}
	v, _ := m["resolvable"].(bool)
	return v
}
