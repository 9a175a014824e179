package disclose

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Fetch reads the full descriptions of the named tools from the
// tool_descriptions resource at uri ("" means [DefaultURI]) over cs, which
// also authorizes them for cs's scope. It returns each tool's entry as
// JSON, keyed by name; a name the server does not know has an entry with
// "error" and "available_tools". A refusal (MISSING_TOOL_SELECTION,
// RATE_LIMITED, ...) is an error that [ErrorOf] decodes.
func Fetch(ctx context.Context, cs *mcp.ClientSession, uri string, tools ...string) (map[string]json.RawMessage, error) {
	if uri == "" {
		uri = DefaultURI
	}
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: SelectionURI(uri, tools...)})
	if err != nil {
		return nil, err
	}
	if len(res.Contents) != 1 {
		return nil, fmt.Errorf("disclose: tool_descriptions returned %d contents, want 1", len(res.Contents))
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &m); err != nil {
		return nil, fmt.Errorf("disclose: tool_descriptions is not a JSON object: %w", err)
	}
	return m, nil
}
