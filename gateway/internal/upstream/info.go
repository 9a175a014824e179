package upstream

import "github.com/modelcontextprotocol/go-sdk/mcp"

// ServerInfo returns the upstream's serverInfo (its name and version as it
// states them), nil while it is down. Anything may call itself by any
// name: trust it only as far as the upstream is trusted.
func (c *Conn) ServerInfo() *mcp.Implementation {
	cs, _, err := c.session()
	if err != nil || cs == nil {
		return nil
	}
	if res := cs.InitializeResult(); res != nil {
		return res.ServerInfo
	}
	return nil
}
