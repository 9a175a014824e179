package disclose

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The extension's error codes (seed 004 section 6), and this
// implementation's additions. They are strings, as in the seed.
const (
	// CodeMissingToolSelection: tool_descriptions was read without a tools
	// query parameter, or with an empty one (seed 6.1).
	CodeMissingToolSelection = "MISSING_TOOL_SELECTION"
	// CodeToolDescriptionRequired: a tool was called before its description
	// was fetched in this scope, or after it changed (seed 6.2).
	CodeToolDescriptionRequired = "TOOL_DESCRIPTION_REQUIRED"
	// CodeInvalidToolSelection: the query of a tool_descriptions read is
	// malformed (a bad escape), names more tools than the server serves in
	// one read, or the URI is not the resource's.
	CodeInvalidToolSelection = "INVALID_TOOL_SELECTION"
	// CodeRateLimited: too many tool_descriptions reads in this scope; the
	// error says when to retry.
	CodeRateLimited = "RATE_LIMITED"
	// CodeUnavailable: the authorization store failed; nothing was
	// authorized or checked. Retry later.
	CodeUnavailable = "AUTHORIZATION_UNAVAILABLE"
)

// JSON-RPC error codes of the errors that travel as JSON-RPC errors.
const (
	// RPCInvalidParams carries MISSING_TOOL_SELECTION and
	// INVALID_TOOL_SELECTION: a resources/read with unusable params.
	RPCInvalidParams = -32602
	// RPCRateLimited carries RATE_LIMITED (an implementation-defined
	// server error; 29 as in HTTP 429).
	RPCRateLimited = -32029
	// RPCInternalError carries AUTHORIZATION_UNAVAILABLE.
	RPCInternalError = -32603
)

// Error is one of the extension's errors, in the seed's JSON shape: the
// object under "error" in seed 004 section 6. It travels in one of two ways
// (see the package documentation): as the structuredContent
// {"error": Error} of a tool result with isError true (a refused
// tools/call), or as the data of a JSON-RPC error (a refused
// resources/read).
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// ResourceURI is where to fetch the missing description
	// (TOOL_DESCRIPTION_REQUIRED).
	ResourceURI string `json:"resource_uri,omitempty"`
	// Examples are well-formed reads (MISSING_TOOL_SELECTION,
	// INVALID_TOOL_SELECTION).
	Examples []string `json:"examples,omitempty"`
	// Tool is the refused tool (TOOL_DESCRIPTION_REQUIRED).
	Tool string `json:"tool,omitempty"`
	// RetryAfterMS says when a rate-limited read may be retried.
	RetryAfterMS int64 `json:"retry_after_ms,omitempty"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// rpcError returns e as a JSON-RPC error with e in its data.
func (e *Error) rpcError(code int64) error {
	data, _ := json.Marshal(e)
	msg := e.Message
	if len(e.Examples) > 0 {
		msg += " Examples: " + strings.Join(e.Examples, ", ")
	}
	return &jsonrpc.Error{Code: code, Message: msg, Data: data}
}

// toolResult returns e as a tool error: structuredContent {"error": e}
// and the same JSON as text, so that a model reading only the text sees
// the code and the URI too.
func (e *Error) toolResult() *mcp.CallToolResult {
	body := map[string]any{"error": e}
	text, _ := json.Marshal(body)
	return &mcp.CallToolResult{
		IsError:           true,
		Content:           []mcp.Content{&mcp.TextContent{Text: string(text)}},
		StructuredContent: body,
	}
}

// ErrorOf returns the extension error carried by err, a JSON-RPC error
// from resources/read (as a Go client receives it), if any.
func ErrorOf(err error) (*Error, bool) {
	var we *jsonrpc.Error
	if !errors.As(err, &we) || len(we.Data) == 0 {
		return nil, false
	}
	var e Error
	if json.Unmarshal(we.Data, &e) != nil || e.Code == "" {
		return nil, false
	}
	return &e, true
}

// ResultError returns the extension error carried by a tool result: a
// result with isError true whose structuredContent is {"error": {...}}
// with a code.
func ResultError(res *mcp.CallToolResult) (*Error, bool) {
	if res == nil || !res.IsError || res.StructuredContent == nil {
		return nil, false
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return nil, false
	}
	var body struct {
		Error *Error `json:"error"`
	}
	if json.Unmarshal(b, &body) != nil || body.Error == nil || body.Error.Code == "" {
		return nil, false
	}
	return body.Error, true
}

func missingSelection(uri string) *Error {
	return &Error{
		Code:     CodeMissingToolSelection,
		Message:  "You must specify one or more tool names in the 'tools' parameter.",
		Examples: selectionExamples(uri),
	}
}

func invalidSelection(uri, format string, args ...any) *Error {
	return &Error{
		Code:     CodeInvalidToolSelection,
		Message:  fmt.Sprintf(format, args...),
		Examples: selectionExamples(uri),
	}
}

func descriptionRequired(uri, tool string, changed bool) *Error {
	msg := fmt.Sprintf("Tool '%s' requires fetching its description before use.", tool)
	if changed {
		msg = fmt.Sprintf("Tool '%s' requires fetching its description before use: it changed since it was fetched.", tool)
	}
	return &Error{
		Code:        CodeToolDescriptionRequired,
		Message:     msg,
		ResourceURI: SelectionURI(uri, tool),
		Tool:        tool,
	}
}

func selectionExamples(uri string) []string {
	return []string{uri + "?tools=tool_name", uri + "?tools=tool1,tool2"}
}
