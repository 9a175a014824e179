package entry

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/wire"
)

// CheckHeaders checks the headers of a 2026-07-28 tools/call against what
// the entry read in its body, as the SDK's server does and more strictly:
// Mcp-Method, Mcp-Name and Mcp-Protocol-Version present once and equal to
// the body's, and the Mcp-Param headers as [wire.CheckParamHeaders] says.
func CheckHeaders(h http.Header, m *Message, tool *mcp.Tool) error {
	for _, k := range []string{"Mcp-Method", "Mcp-Name", "Mcp-Protocol-Version"} {
		if len(h.Values(k)) > 1 {
			return wire.Mismatch("%s is repeated; send it once", k)
		}
	}
	if h.Get("Mcp-Method") != m.Method {
		return wire.Mismatch("Mcp-Method %q does not match the body's method %q", clipHeader(h.Get("Mcp-Method")), m.Method)
	}
	if h.Get("Mcp-Name") != m.Name {
		return wire.Mismatch("Mcp-Name %q does not match the body's name %q", clipHeader(h.Get("Mcp-Name")), clipHeader(m.Name))
	}
	return wire.CheckParamHeaders(h, tool, m.Arguments)
}

func clipHeader(s string) string {
	if len(s) > 64 {
		return show([]byte(s[:64]), false) + "..."
	}
	return show([]byte(s), false)
}
