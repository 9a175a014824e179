// Package call is the path of one client request through the gateway: the
// [Call] that the entry reads once, the [Stage]s it crosses, compiled into
// one [Chain] per method (as Caddy compiles its handler chain), and the
// raw JSON results the forwarders return.
//
// Every request the gateway forwards to an upstream is a Call of one of
// the [Methods]; the entry (package entry) makes it, the stages (package
// stage) judge it, and the final handler (package forward) sends it in the
// upstream's era. What differs between protocol eras and transports is the
// client's [Conn], which the entry provides, and the forwarders: a stage
// asks the client through Conn and never looks at the transport.
package call

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/policy"
	"github.com/preflightmcp/preflight/resolve"
)

// The methods that cross the chain: every request a client sends that an
// upstream answers, and a client's answer to an upstream's question.
const (
	ToolsCall     = "tools/call"
	ToolsResolve  = "tools/resolve"
	PromptsGet    = "prompts/get"
	ResourcesRead = "resources/read"
	Complete      = "completion/complete"
	Subscribe     = "resources/subscribe"
	Unsubscribe   = "resources/unsubscribe"
	// Answer is a client's answer to a question an upstream asked within
	// a call; Call.Name is the question's method, Call.Arguments the
	// answer.
	Answer = "answer"
)

// Methods lists every method a chain is compiled for.
func Methods() []string {
	return []string{ToolsCall, ToolsResolve, PromptsGet, ResourcesRead, Complete, Subscribe, Unsubscribe, Answer}
}

// Call is one client request on its way to an upstream.
type Call struct {
	// Method is one of the methods above.
	Method string
	// Name is the tool or prompt name as the client sent it, the resource
	// URI, the completion's reference (a prompt name or resource URI), or
	// an answered question's method.
	Name string
	// Arguments are the call's arguments as judged: the exact bytes the
	// entry proved unambiguous (nil for none). An answer's is the answer.
	Arguments json.RawMessage
	// Meta is the request's _meta as judged (nil for none).
	Meta json.RawMessage
	// Params are the other members of a request the chain judges whole
	// (completion/complete's argument, context and ref).
	Params json.RawMessage
	// InputResponses and RequestState are a 2026-07-28 client's answers
	// and the state it echoes on a retry.
	InputResponses mcp.InputResponseMap
	RequestState   string
	// Client is who sent it and how to reach them.
	Client *Client

	// Set by route: the upstream, its name for the target, and the tool's
	// catalog entry (tools/call and tools/resolve).
	Upstream *upstream.Conn
	Target   string
	Tool     *catalog.Tool

	// Set by resolve (tools): what the call will do.
	Resolution *Resolution

	// Set by the flow stage (tools/call): the value read by another call
	// that the arguments carry; nil when they carry none.
	Flow *Flow

	// Set by decide, ask and approve (tools/call): the gateway's decision
	// (nil when decisions are off), and who confirmed the call (nil when
	// nobody did).
	Decision     *Decision
	Confirmation *Confirmation
	// SignedInAs is, for an upstream the gateway signs in to with OAuth,
	// whose grant the call's requests carry: the principal's own, or
	// "shared" (set by the signin stage); "" for other upstreams.
	SignedInAs string

	// Set by forward: how many times the call was sent (0 when it never
	// reached forward) and the upstream's protocol era.
	Attempts    int
	UpstreamEra string
	// NotificationsDropped counts the call's progress and log
	// notifications dropped because the client read them slower than the
	// upstream sent them (set by forward).
	NotificationsDropped int
	// Outcome says how the call ended: "ok", "tool_error",
	// "input_required", or, for calls a stage ended, "declined",
	// "cancelled", "timeout", "denied", "quarantined", "unknown" (sent,
	// then lost, and not retried), "error".
	Outcome string

	// Set by redact: what was removed from the result (kinds and counts,
	// never values); nil when nothing was. Unredacted is the result as the
	// upstream sent it, whose values flow remembers: a value redacted
	// from what the client got may still reach it by another way.
	Redaction  *Redaction
	Unredacted json.RawMessage

	// Audited is set once the call has an audit record, so that it gets
	// exactly one.
	Audited bool

	// Reply, on an Answer, delivers the judged answer to the upstream
	// that asked; the final handler calls it.
	Reply func(ctx context.Context, answer json.RawMessage) error
	// Local, set by the entry on the SDK's path, serves the request with
	// the SDK server's own handlers: the final handler of a method the
	// gateway answers itself (tools/resolve) calls it, with the Call in
	// its context ([FromContext]).
	Local func(ctx context.Context) (mcp.Result, error)

	args     map[string]any
	argsErr  error
	argsDone bool
}

// Ended returns how the call ended, given the error it ended with: its
// Outcome when a stage or forwarder set one, else "error" or "ok".
func (c *Call) Ended(err error) string {
	switch {
	case c.Outcome != "":
		return c.Outcome
	case err != nil:
		return "error"
	}
	return "ok"
}

// Args returns the arguments decoded once: an empty map for none, an
// error (-32602) when they are not a JSON object.
func (c *Call) Args() (map[string]any, error) {
	if c.argsDone {
		return c.args, c.argsErr
	}
	c.argsDone = true
	if len(c.Arguments) == 0 {
		c.args = map[string]any{}
		return c.args, nil
	}
	if err := json.Unmarshal(c.Arguments, &c.args); err != nil || c.args == nil {
		c.args, c.argsErr = nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: c.Method + ": params.arguments must be a JSON object"}
	}
	return c.args, c.argsErr
}

// SetArgs records arguments the entry decoded already (nil: decode on
// first use).
func (c *Call) SetArgs(args map[string]any) {
	if args != nil {
		c.args, c.argsErr, c.argsDone = args, nil, true
	}
}

type contextKey struct{}

// NewContext returns ctx carrying c.
func NewContext(ctx context.Context, c *Call) context.Context {
	return context.WithValue(ctx, contextKey{}, c)
}

// FromContext returns the Call ctx carries, nil if none.
func FromContext(ctx context.Context) *Call {
	c, _ := ctx.Value(contextKey{}).(*Call)
	return c
}

// Client is the client side of a call.
type Client struct {
	// Version is the request's protocol version.
	Version string
	// Principal is the authenticated user, "" when there is none.
	Principal string
	// Capabilities are the client's, as declared on this request (or, on
	// a legacy session, in initialize); nil when it declared none.
	Capabilities *mcp.ClientCapabilities
	// Header holds the request's HTTP headers; nil over stdio.
	Header http.Header
	// Conn reaches the client while the call runs. Never nil.
	Conn Conn
	// SessionID is the client's legacy (2025-11-25) session with the
	// gateway, "" for none: what the gateway remembers per client is kept
	// per principal and session.
	SessionID string
	// Session is the client's session with the gateway, nil when the
	// request has none (a 2026-07-28 request served by the entry).
	// Subscriptions belong to it and end with it.
	Session Session
}

// Session is a client's session with the gateway's SDK server.
type Session interface {
	// Wait returns when the session has ended.
	Wait() error
}

// Modern reports a 2026-07-28 (or later) request: no session; questions
// are answered in rounds. Forwarders read it; stages ask Conn instead.
func (c *Client) Modern() bool { return len(c.Version) == 10 && c.Version >= "2026-07-28" }

// Conn is how the gateway reaches the client while a call runs; the entry
// implements it for each protocol era and transport.
type Conn interface {
	// Ask puts a question (elicitation/create, sampling/createMessage or
	// roots/list) to the client within the call and returns its answer.
	// ErrRound means the client answers in a later round instead (a
	// 2026-07-28 client: the call ends with input_required and the retry
	// carries the answer); ErrCannotAsk that it cannot be asked at all.
	Ask(ctx context.Context, method string, params mcp.InputRequest) (mcp.InputResponse, error)
	// Notify sends the client a notification about the call: progress or
	// a log message (params as JSON). It never blocks on the client.
	Notify(ctx context.Context, method string, params json.RawMessage)
	// Completed tells the client that a URL-mode elicitation it was asked
	// within the call is complete (2025-11-25); a no-op where the protocol
	// has no such notification.
	Completed(ctx context.Context, elicitationID string)
}

// Errors of [Conn.Ask].
var (
	ErrRound     = errors.New("the client answers in a later round")
	ErrCannotAsk = errors.New("the client cannot be asked within this call")
)

// Resolution is what the resolve stage worked out about a tools/call.
type Resolution struct {
	resolve.Resolution
	// Source says where it came from: "upstream" (the upstream's
	// tools/resolve, within bounds), "rules", "override" or "static".
	Source string
	// Args names the arguments the deciding rule read, if a rule decided.
	Args []string
}

// Effective is package policy's reading of the resolution's annotations
// and hints.
func (r *Resolution) Effective() policy.Effective {
	a := r.Annotations
	return policy.Evaluate(policy.Input{Resolved: &a, ResolvedHints: r.Hints})
}

// Effect returns the effect of a call resolved as r: its effect hint,
// else the one its annotations imply (read for a read-only tool, write
// otherwise); a nil r is resolved by the default annotations.
func (r *Resolution) Effect() hints.Effect {
	if r == nil {
		return hints.Derive(preflight.DefaultAnnotations).Effect
	}
	return hints.Merge(hints.Derive(r.Annotations), r.Hints).Effect
}

// AsResolution converts a Resolution for package resolve.
func (r *Resolution) AsResolution() *resolve.Resolution {
	rr := r.Resolution
	return &rr
}

// Verdict is what the gateway does with a call.
type Verdict string

// The verdicts.
const (
	// Allow: the call is forwarded.
	Allow Verdict = "allow"
	// Confirm: the call is forwarded once someone confirmed it (the
	// client in band, or a person out of band).
	Confirm Verdict = "confirm"
	// Deny: the call is refused.
	Deny Verdict = "deny"
)

// Decision is what the decide stage made of a tools/call.
type Decision struct {
	Verdict Verdict
	// Reason says why, in words, for the client, the log and the audit.
	Reason string
	// Rule names the deployer's decision rule that decided, "" for the
	// defaults.
	Rule string
	// DryRun: the decision is recorded but not enforced.
	DryRun bool
	// OutOfBand: a rule demands a person the agent cannot impersonate;
	// the client's own confirmation does not count.
	OutOfBand bool
	// Args names the arguments the deciding rule read.
	Args []string
}

// Flow is a value a call's arguments carry that the client read from
// another call, or that could not be checked. Never the value.
type Flow struct {
	// From is where it was read: the exposed tool name or URI; empty when
	// the flows could not be looked up.
	From string
	// Upstream is the server that returned it.
	Upstream string
	// CallsAgo counts the client's calls since.
	CallsAgo int64
	// Reason says it in words, for the client, the log and the audit.
	Reason string
}

// Confirmation says who confirmed a call. Declined, cancelled and timed
// out calls never get one.
type Confirmation struct {
	// By is "client" (in band) or "page" (out of band).
	By string `json:"by"`
	// Approver is the principal who confirmed ("" when unauthenticated).
	Approver string `json:"approver,omitempty"`
	// RequestID identifies the confirmation request.
	RequestID string `json:"id,omitempty"`
}

// Redaction is what the redact stage did to a result, without any of the
// values.
type Redaction struct {
	// Sensitivity is the result's effective sensitivity.
	Sensitivity hints.Sensitivity
	// Withheld: the whole result was replaced by a notice.
	Withheld bool
	// Kinds counts the distinct values redacted, by kind.
	Kinds map[string]int
}
