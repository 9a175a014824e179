// Package pipeline is the path of one call through the gateway: a chain of
// named stages, each a func(next Handler) Handler as in net/http
// middleware, compiled once when the gateway starts.
//
// The gateway's chain is, outermost first,
//
//	log -> metrics -> route -> pin -> resolve -> decide -> ask -> approve -> confirmed -> audit -> redact -> retry -> forward
//
// where a stage whose feature is off is left out.
// A [Call] enters with what the client sent; route fills in the upstream
// and its name for the target, resolve the call's annotations and policy
// hints ([Resolution]), and the final handler (package bridge) forwards it
// in whichever protocol era each side speaks.
package pipeline

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/catalog"
	"github.com/preflightmcp/preflight/gateway/upstream"
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

	// Wire, when set, is the client's HTTP request as it came: the call
	// takes the passthrough path (see package bridge), and the final
	// handler writes the response to Wire.Response itself.
	Wire *Wire

	// Set by decide: allow, confirm or deny, and why.
	Decision *Decision

	// Set by ask and approve when the call was confirmed; nil otherwise.
	Confirmation *Confirmation

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
}

// Verdict is what the gateway decided to do with a call.
type Verdict string

// Verdicts.
const (
	Allow   Verdict = "allow"
	Confirm Verdict = "confirm"
	Deny    Verdict = "deny"
)

// Decision is the decide stage's verdict on one call.
type Decision struct {
	Verdict Verdict
	// Reason says why, in words.
	Reason string
	// Rule names the rule that decided, "" for the defaults.
	Rule string
	// DryRun: the verdict is recorded, not enforced.
	DryRun bool
	// OutOfBand: a rule demands a human the agent cannot impersonate, so
	// the confirmation is never asked in-band.
	OutOfBand bool
}

// Confirmation says who confirmed a call.
type Confirmation struct {
	// By is "client" (in-band) or "page" (out of band).
	By string
	// Approver is the principal who approved.
	Approver string
	// RequestID identifies the approval request.
	RequestID string
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
