package resolve

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
)

// NewResolveRequest returns a tools/resolve request as the server's method
// handler receives it once the SDK has decoded the params, for benchmarks
// that dispatch below the transport.
func NewResolveRequest(ss *mcp.ServerSession, p *preflight.ResolveParams) mcp.Request {
	return &mcp.ServerRequest[*resolveParams]{Session: ss, Params: &resolveParams{ResolveParams: *p}}
}
