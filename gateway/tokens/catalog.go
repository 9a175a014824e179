package tokens

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ReadCatalog decodes a catalog file: a tools/list result, a JSON object
// with a "tools" array of tools; other members (server, protocolVersion,
// nextCursor) are ignored. Every tool must have a name.
func ReadCatalog(r io.Reader) ([]*mcp.Tool, error) {
	var doc struct {
		Tools *[]json.RawMessage `json:"tools"`
	}
	dec := json.NewDecoder(r)
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not a tools/list result: %w", err)
	}
	if doc.Tools == nil {
		return nil, errors.New(`not a tools/list result: no "tools" array`)
	}
	tools := make([]*mcp.Tool, 0, len(*doc.Tools))
	for i, raw := range *doc.Tools {
		t := new(mcp.Tool)
		if err := json.Unmarshal(raw, t); err != nil {
			return nil, fmt.Errorf("tools[%d]: %w", i, err)
		}
		if t.Name == "" {
			return nil, fmt.Errorf("tools[%d]: no name", i)
		}
		tools = append(tools, t)
	}
	return tools, nil
}
