package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/policy"
	"github.com/preflightmcp/preflight/resolve"
)

// flagsLegend explains the notation of [annFlags].
const flagsLegend = "ro readOnlyHint, d destructiveHint, i idempotentHint, ow openWorldHint; - means false"

// annFlags writes the four annotations in fixed slots, a flag when true
// and dashes when false: "ro - i --" is read-only and idempotent.
func annFlags(a preflight.Annotations) string {
	slot := func(on bool, flag string) string {
		if on {
			return flag
		}
		return strings.Repeat("-", len(flag))
	}
	return strings.Join([]string{
		slot(a.ReadOnlyHint, "ro"),
		slot(a.DestructiveHint, "d"),
		slot(a.IdempotentHint, "i"),
		slot(a.OpenWorldHint, "ow"),
	}, " ")
}

// hintsText writes the hints that are set, "-" if none.
func hintsText(h hints.Hints) string {
	var parts []string
	if h.Effect != "" {
		parts = append(parts, "effect="+string(h.Effect))
	}
	if h.Idempotent != nil {
		parts = append(parts, fmt.Sprintf("idempotent=%t", *h.Idempotent))
	}
	if h.RequiresConfirmation != nil {
		parts = append(parts, fmt.Sprintf("confirm=%t", *h.RequiresConfirmation))
	}
	if h.ResultSensitivity != "" {
		parts = append(parts, "sensitivity="+string(h.ResultSensitivity))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// shorten returns the first line of s, cut to at most n runes.
func shorten(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i]) + " ..."
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-3]) + "..."
}

// wrap fills text into lines of at most width columns.
func wrap(text string, width int) string {
	var b strings.Builder
	col := 0
	for _, w := range strings.Fields(text) {
		switch {
		case col == 0:
		case col+1+len(w) > width:
			b.WriteByte('\n')
			col = 0
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(w)
		col += len(w)
	}
	b.WriteByte('\n')
	return b.String()
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// compactJSON is v in one line, for echoing arguments.
func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// contentText is the text of a tool result: text contents joined, other
// contents described, structured content when there is nothing else.
func contentText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link %s]", c.URI))
		case *mcp.EmbeddedResource:
			uri := ""
			if c.Resource != nil {
				uri = c.Resource.URI
			}
			parts = append(parts, fmt.Sprintf("[embedded resource %s]", uri))
		default:
			parts = append(parts, fmt.Sprintf("[%T]", c))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		return compactJSON(res.StructuredContent)
	}
	return strings.Join(parts, "\n")
}

// rpcError is a JSON-RPC error as the command reports it.
type rpcError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
	// Hint says what to do about it.
	Hint string `json:"hint,omitempty"`
}

// rpcErrorOf returns the JSON-RPC error in err, answered to method, or
// nil if err is not one (a transport failure, say).
func rpcErrorOf(err error, method string) *rpcError {
	var e *rpcError
	var we *jsonrpc.Error
	switch {
	case errors.As(err, &we):
		e = &rpcError{Code: we.Code, Message: we.Message, Data: we.Data}
	default:
		return nil
	}
	e.Hint = hintFor(e.Code, method)
	return e
}

// hintFor says what to do about a JSON-RPC error code answered to method.
func hintFor(code int64, method string) string {
	resolving := method == preflight.MethodResolve
	switch code {
	case preflight.CodeMethodNotFound:
		if resolving {
			return "the server does not implement tools/resolve: the static annotations from tools/list apply"
		}
		return "the server does not implement " + method
	case preflight.CodeInvalidParams:
		if resolving {
			return "fix the arguments or the tool name: do not call the tool with these arguments unchanged (and resolve only tools that tools/list marks resolvable)"
		}
		return "fix the arguments or the tool name (see the tool's input schema in tools/list)"
	case preflight.CodeInternalError:
		if resolving {
			return "the server could not resolve this call: use the static annotations from tools/list, or abort"
		}
		return "the server failed; try again later or report it to the server's authors"
	case preflight.CodeMissingCapability:
		return "the server needs a client capability this request did not declare (see data); for tool resolution, try -shape extension"
	case -32022:
		return "the server does not support this protocol version (see data); choose another with -era"
	case -32020:
		return "the request's MCP headers and body disagree; this is a client bug"
	}
	return ""
}

// writeRPCError writes e for a person.
func writeRPCError(w io.Writer, method string, e *rpcError) {
	fmt.Fprintf(w, "%s: error %d: %s\n", method, e.Code, e.Message)
	if len(e.Data) > 0 {
		fmt.Fprintf(w, "  data: %s\n", e.Data)
	}
	if e.Hint != "" {
		fmt.Fprintf(w, "  hint: %s\n", e.Hint)
	}
}

// decisionView is a [resolve.Decision] for JSON output.
type decisionView struct {
	Resolved          bool                       `json:"resolved"`
	Shape             string                     `json:"shape,omitempty"`
	Fallback          string                     `json:"fallback,omitempty"`
	Effective         policy.Effective           `json:"effective"`
	NeedsConfirmation bool                       `json:"needsConfirmation"`
	SafeToRetry       bool                       `json:"safeToRetry"`
	SecuritySchemes   []preflight.SecurityScheme `json:"securitySchemes,omitempty"`
}

func viewDecision(d *resolve.Decision) *decisionView {
	if d == nil {
		return nil
	}
	v := &decisionView{
		Resolved:          d.Resolved,
		Shape:             d.Shape,
		Effective:         d.Effective,
		NeedsConfirmation: d.NeedsConfirmation(),
		SafeToRetry:       d.SafeToRetry(),
		SecuritySchemes:   d.SecuritySchemes,
	}
	if d.Fallback != nil {
		v.Fallback = d.Fallback.Error()
	}
	return v
}

// staticEffective is what a client knows of a call of t from tools/list
// alone.
func staticEffective(t *mcp.Tool) policy.Effective {
	h, _ := hints.Read(t.Meta)
	return policy.Evaluate(policy.Input{Static: t.Annotations, StaticHints: h})
}

// origin says in words where a decision's values came from.
func origin(d *resolve.Decision) string {
	switch {
	case d.Resolved:
		return "resolved, " + d.Shape + " shape"
	case d.Fallback != nil:
		if e := rpcErrorOf(d.Fallback, preflight.MethodResolve); e != nil {
			return fmt.Sprintf("static: resolution failed with error %d: %s", e.Code, e.Message)
		}
		return "static: resolution failed: " + d.Fallback.Error()
	}
	return "static: not resolved"
}
