package entry

import (
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/rawjson"
	"github.com/preflightmcp/preflight/gateway/internal/wire"
)

// CheckHeaders checks the headers of a 2026-07-28 tools/call against what
// the entry read in its body, as the SDK's server does and more strictly:
// Mcp-Method, Mcp-Name and Mcp-Protocol-Version present once and equal to
// the body's (its _meta protocol version, which must be there with the
// client's capabilities), and the Mcp-Param headers as
// [wire.CheckParamHeaders] says.
func CheckHeaders(h http.Header, m *Message, tool *mcp.Tool) error {
	for _, k := range []string{"Mcp-Method", "Mcp-Name", "Mcp-Protocol-Version"} {
		if len(h.Values(k)) > 1 {
			return wire.Mismatch("%s is repeated; send it once", k)
		}
	}
	version, ok, _ := rawjson.GetString(m.Meta, mcp.MetaKeyProtocolVersion)
	if !ok {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("missing or invalid _meta field %q", mcp.MetaKeyProtocolVersion)}
	}
	if h.Get("Mcp-Protocol-Version") != version {
		return wire.Mismatch("Mcp-Protocol-Version %q does not match the body's %s %q", show([]byte(h.Get("Mcp-Protocol-Version")), false), mcp.MetaKeyProtocolVersion, show([]byte(version), false))
	}
	if caps, ok, _ := rawjson.Get(m.Meta, mcp.MetaKeyClientCapabilities); !ok || len(caps) == 0 || caps[0] != '{' {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("missing or invalid _meta field %q", mcp.MetaKeyClientCapabilities)}
	}
	if h.Get("Mcp-Method") != m.Method {
		return wire.Mismatch("Mcp-Method %q does not match the body's method %q", show([]byte(h.Get("Mcp-Method")), false), m.Method)
	}
	if h.Get("Mcp-Name") != m.Name {
		return wire.Mismatch("Mcp-Name %q does not match the body's name %q", show([]byte(h.Get("Mcp-Name")), false), show([]byte(m.Name), false))
	}
	return wire.CheckParamHeaders(h, tool, m.Arguments)
}
