// Package pipeline is the path of one call through the gateway: a chain of
// named stages, each a func(next Handler) Handler as in net/http
// middleware, compiled once when the gateway starts.
//
// The gateway's chain is, outermost first,
//
//	log -> metrics -> route -> audit.refused -> pin -> resolve -> decide
//	    -> ask -> approve -> confirmed -> audit -> redact -> retry -> forward
//
// each stage after route only when its feature is on.
//
// where a stage whose feature is off is left out.
// A [Call] enters with what the client sent; route fills in the upstream
// and its name for the target, resolve the call's annotations and policy
// hints ([Resolution]), decide the [Decision], ask (or approve) the
// [Confirmation], and the final handler (package bridge) forwards it
// in whichever protocol era each side speaks.
package pipeline

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/resolve"
)

// Call is one client request on its way to an upstream: tools/call,
// prompts/get or resources/read.
type Call struct {
	// Method is upstream.MethodCallTool, MethodGetPrompt or
	// MethodReadResource.
	Method string
	// Name is the tool or prompt name as the client sent it, or the
	// resource URI.
	Name string
	// Arguments are the arguments as the client sent them (nil for none).
	Arguments json.RawMessage
	// Meta is the request's _meta. Stages must not modify it in place.
	Meta mcp.Meta
	// InputResponses and RequestState are a 2026-07-28 client's answers
	// and the state it echoes.
	InputResponses mcp.InputResponseMap
	RequestState   string
	// Client is who sent it.
	Client *Client

	// Set by route: the upstream, its name for the target, and the tool's
	// catalog entry (tools/call only).
	Upstream *upstream.Conn
	Target   string
	Tool     *catalog.Tool

	// Set by resolve (tools/call only): what the call will do.
	Resolution *Resolution

	// decide, ask, confirmed: the gateway's decision on a tools/call
	// (nil when decisions are off or for other methods), and who
	// confirmed it (set by ask or approve; nil when nobody did).
	Decision     *Decision
	Confirmation *Confirmation

	// Wire, when set, is the client's HTTP request as it came: the call
	// takes the passthrough path (see package bridge), and the final
	// handler writes the response to Wire.Response itself.
	Wire *Wire

	// Set by retry: how many times forward ran (0 when the call never
	// reached it).
	Attempts int

	// Set by forward, for the stages that wrap it: the upstream's protocol
	// era and how the call ended ("ok", "tool_error", "input_required").
	// Stages that end a call themselves set Outcome too: "declined",
	// "cancelled", "timeout", "denied", "quarantined", "unknown" (the
	// upstream failed after the request was sent and the call was not
	// retried, or retries gave up), "error".
	UpstreamEra string
	Outcome     string

	// redact: what was removed from the result (kinds and counts, never
	// values); nil when the result was not redacted or not looked at.
	Redaction *Redaction

	// audit: set once the call has an audit record, so that it gets
	// exactly one (see [Audit]).
	audited bool
}

// Redaction is what the redact stage did to a result, without any of
// the values.
type Redaction struct {
	// Sensitivity is the result's effective sensitivity.
	Sensitivity hints.Sensitivity
	// Withheld: the whole result was replaced by a notice.
	Withheld bool
	// Kinds counts the distinct values redacted, by kind.
	Kinds map[string]int
}

// Wire is a 2026-07-28 client's request over HTTP, forwarded without
// decoding it into the SDK's types.
type Wire struct {
	// Body is the JSON-RPC request; Params its params member.
	Body, Params json.RawMessage
	// Header holds the request's headers.
	Header http.Header
	// Response is where the answer goes.
	Response http.ResponseWriter
	// Result, when set, is applied by the final handler to the result of
	// the final response (not to an input_required one) before writing
	// it: how a stage that must see or change a result (redact) does so on
	// this path. It returns the result as the client gets it.
	Result func(result json.RawMessage) json.RawMessage
}

// Client describes the client side of a call.
type Client struct {
	// Version is the request's protocol version.
	Version string
	// Modern reports a 2026-07-28 (or later) request: no session, questions
	// as input_required.
	Modern bool
	// Capabilities are the client's, as declared on this request (or, on
	// a legacy session, in initialize).
	Capabilities *mcp.ClientCapabilities
	// Principal is the authenticated user, "" when there is none.
	Principal string
	// Session is the SDK session of the request (under 2026-07-28 it lives
	// for this request only).
	Session *mcp.ServerSession
	// Request is the SDK request the call came in.
	Request mcp.Request
}

// Resolution is what the resolve stage worked out about a tools/call.
type Resolution struct {
	resolve.Resolution
	// Source says where it came from: "upstream" (the upstream's
	// tools/resolve, within bounds), "rules", "override" or "static".
	Source string
}

// Handler serves a call.
type Handler interface {
	Serve(ctx context.Context, c *Call) (mcp.Result, error)
}

// HandlerFunc adapts a function to [Handler].
type HandlerFunc func(ctx context.Context, c *Call) (mcp.Result, error)

// Serve calls f.
func (f HandlerFunc) Serve(ctx context.Context, c *Call) (mcp.Result, error) { return f(ctx, c) }

// Stage is one named step of the chain.
type Stage struct {
	Name string
	Wrap func(next Handler) Handler
}

// Chain returns final wrapped in stages, the first stage outermost: a call
// passes through stages[0], stages[1], ..., then final.
func Chain(final Handler, stages ...Stage) Handler {
	h := final
	for i := len(stages) - 1; i >= 0; i-- {
		h = stages[i].Wrap(h)
	}
	return h
}
