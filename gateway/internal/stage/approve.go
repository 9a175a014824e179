package stage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/requeststate"
)

// DefaultResumeWait is how long the approve stage waits for a decision
// when a 2026-07-28 client retries with the requestState of its approval.
const DefaultResumeWait = 10 * time.Second

// statePrefix marks the approve stage's own payload in a sealed
// requestState, so that the bridge's and other stages' states pass by.
const statePrefix = "approval:"

// Approve is the out-of-band approval stage. A tools/call whose decision
// is Confirm (not a dry run) and that nobody confirmed in-band becomes an
// approval request (package approval) bound to the principal, the server,
// the tool and the arguments, and waits for a person on the gateway's page,
// which shows the arguments whole, those the deciding rule read first
// (Call.Decision.Args, then Call.Resolution.Args). A call whose arguments
// the page cannot show whole is not run, and the client is told why.
// The client is asked, through its [call.Conn], to open the page (a
// URL-mode elicitation) when it declared that it can be:
//
//   - a client that answers in a later round gets input_required with the
//     page's link and a sealed requestState; its retry waits up to
//     ResumeWait for the decision and runs the call once it is approved;
//   - a client that answers within the call waits for the decision (until
//     the request lapses), then is told the elicitation is complete;
//   - any other client gets a tool error saying where to approve and to
//     retry with the same arguments (approval.RetryText).
//
// An approved call runs once: the retry that uses the approval sets
// Call.Confirmation (By "page") and goes on; another retry asks anew.
// Denied, expired, declined and cancelled calls end here with a tool error
// that says so; the upstream is never called for them.
type Approve struct {
	// Approvals hold the calls that wait for a person. Required.
	Approvals *approval.Service
	// PageURL returns the page's root URL as people reach it
	// ("http://127.0.0.1:7780/ui"); the links clients get start with it.
	PageURL func() string
	// Ring and Audience seal the requestState of a URL-mode elicitation
	// (nil Ring: requeststate.Default()), for Audience + "/approve", so
	// that it is never taken for the forwarder's state or the ask
	// stage's, nor theirs for it.
	Ring     *requeststate.Ring
	Audience string
	// ResumeWait bounds how long a retry waits for the decision. Zero
	// means DefaultResumeWait.
	ResumeWait time.Duration
	// Logger receives refused state. Nil discards.
	Logger *slog.Logger
}

// NewApprove returns the approve stage with o's zero fields set to their
// defaults.
func NewApprove(o Approve) *Approve {
	if o.ResumeWait <= 0 {
		o.ResumeWait = DefaultResumeWait
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Audience == "" {
		o.Audience = "preflight-gateway"
	}
	return &o
}

// Name implements call.Stage.
func (*Approve) Name() string { return "approve" }

// Methods implements call.Scoped.
func (*Approve) Methods() []string { return []string{call.ToolsCall} }

// Serve implements call.Stage.
func (a *Approve) Serve(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	d := c.Decision
	if c.Tool == nil || d == nil || d.Verdict != call.Confirm || d.DryRun || c.Confirmation != nil {
		return next.Serve(ctx, c)
	}
	return a.serve(ctx, c, next)
}

func (a *Approve) serve(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	ac := a.callOf(c)
	id, ok, err := a.ownState(c)
	if err != nil {
		a.Logger.WarnContext(ctx, "requestState refused", "reason", requeststate.ReasonOf(err), "tool", c.Name, "error", err)
		return nil, requeststate.WireError(err)
	}
	if ok {
		return a.resume(ctx, c, ac, id, next)
	}
	req, err := a.Approvals.Ask(ctx, ac)
	var ns *approval.NotShowableError
	switch {
	case errors.Is(err, approval.ErrFull):
		c.Outcome = "error"
		return call.ToolError("Not run: too many calls of yours are waiting for approval; decide or let them lapse on the approval page, then retry. The server was not called."), nil
	case errors.As(err, &ns):
		c.Outcome = "denied"
		return call.ToolError(notShowableText(ns)), nil
	case err != nil:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: " + err.Error()}
	}
	switch req.State {
	case approval.Used:
		return a.run(ctx, c, req, next)
	case approval.Pending:
	default:
		return a.notRun(c, req), nil
	}
	base := a.pageURL()
	if approval.SupportsURL(c.Client.Capabilities) {
		return a.askToOpen(ctx, c, ac, base, req, next)
	}
	return a.retryText(c, base, req)
}

// notShowableText says why a call cannot be approved on the page.
func notShowableText(ns *approval.NotShowableError) string {
	return "Not run: this call needs a person's approval, but it cannot be approved on the approval page: " + ns.Why +
		", and a person approves only what the page shows whole. Make the call with smaller arguments (split the work), " +
		"or ask the gateway's operator for a rule that decides it. The server was not called."
}

// retryText ends the call with a tool error that says where to approve it
// and to retry.
func (a *Approve) retryText(c *call.Call, base string, req *approval.Request) (json.RawMessage, error) {
	text, err := approval.RetryText(base, req)
	if err != nil {
		return nil, internal("approval page: %v", err)
	}
	c.Outcome = "input_required"
	return call.ToolError(text), nil
}

// callOf is the call as package approval knows it.
func (a *Approve) callOf(c *call.Call) approval.Call {
	ac := approval.Call{Principal: c.Client.Principal, Server: c.Upstream.Name(), Tool: c.Target,
		Arguments: c.Arguments, Reason: c.Decision.Reason, Matter: matter(c)}
	if len(ac.Arguments) == 0 {
		ac.Arguments = json.RawMessage("{}")
	}
	if r := c.Resolution; r != nil {
		ac.Effect = r.Hints.Effect
		if ac.Effect == "" {
			ac.Effect = hints.Derive(r.Annotations).Effect
		}
	}
	return ac
}

// matter names the arguments an approver sees first: those the deciding
// rule and the resolving rule read, then those that name what the call
// acts on.
func matter(c *call.Call) []string {
	names := slices.Clone(c.Decision.Args)
	if r := c.Resolution; r != nil {
		names = append(names, r.Args...)
	}
	var out []string
	for _, n := range append(names, approval.TargetNames...) {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func (a *Approve) pageURL() string {
	if a.PageURL == nil {
		return ""
	}
	return a.PageURL()
}

// run forwards an approved call.
func (a *Approve) run(ctx context.Context, c *call.Call, req *approval.Request, next call.Handler) (json.RawMessage, error) {
	c.Confirmation = &call.Confirmation{By: "page", Approver: req.DecidedBy.String(), RequestID: req.ID}
	return next.Serve(ctx, c)
}

// notRun ends a call whose request was denied or lapsed.
func (a *Approve) notRun(c *call.Call, req *approval.Request) json.RawMessage {
	switch req.State {
	case approval.Denied:
		c.Outcome = "denied"
	case approval.Expired:
		c.Outcome = "timeout"
	default:
		c.Outcome = "input_required"
	}
	return call.ToolError(approval.OutcomeText(req))
}

// binding binds the stage's requestState to the call as the client made it.
func (a *Approve) binding(c *call.Call) (requeststate.Binding, error) {
	b := requeststate.Binding{Method: c.Method, Target: c.Name, Audience: a.Audience + "/approve", Principal: c.Client.Principal}
	var args any
	if len(c.Arguments) > 0 {
		args = c.Arguments
	}
	d, err := requeststate.ArgumentsDigest(args)
	b.Arguments = d
	return b, err
}

// ownState returns the approval request id sealed in the call's
// requestState, if the state is the stage's own. Another valid state (the
// bridge's, another stage's) is left to its owner; one the ring refuses is
// an error, as the bridge would answer it, and the call is not asked for.
func (a *Approve) ownState(c *call.Call) (string, bool, error) {
	if c.RequestState == "" {
		return "", false, nil
	}
	b, err := a.binding(c)
	if err != nil {
		return "", false, &requeststate.Error{Reason: requeststate.ReasonArguments, Detail: err.Error()}
	}
	raw, err := a.Ring.Open(c.RequestState, b)
	if err != nil {
		return "", false, err
	}
	id, ok := cutPrefix(string(raw), statePrefix)
	return id, ok && approval.ValidID(id), nil
}

func cutPrefix(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || s[:len(prefix)] != prefix {
		return "", false
	}
	return s[len(prefix):], true
}

// inputRequired asks a 2026-07-28 client to open the page (URL mode).
func (a *Approve) inputRequired(c *call.Call, base string, req *approval.Request) (json.RawMessage, error) {
	p, err := approval.URLElicitation(base, req)
	if err != nil {
		return nil, internal("approval page: %v", err)
	}
	b, err := a.binding(c)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: " + err.Error()}
	}
	token, err := a.Ring.Seal(b, []byte(statePrefix+req.ID))
	if err != nil {
		return nil, internal("sealing requestState: %v", err)
	}
	qs, err := call.Questions(mcp.InputRequestMap{approval.InputKey: p})
	if err != nil {
		return nil, internal("encoding the approval question: %v", err)
	}
	c.Outcome = "input_required"
	return call.InputRequired(qs, token), nil
}

// resume serves a 2026-07-28 client's retry that carries the stage's
// requestState: the user's answer to the URL elicitation, then the
// request's decision.
func (a *Approve) resume(ctx context.Context, c *call.Call, ac approval.Call, id string, next call.Handler) (json.RawMessage, error) {
	if er, ok := c.InputResponses[approval.InputKey].(*mcp.ElicitResult); ok {
		switch er.Action {
		case "decline":
			c.Outcome = "declined"
			return call.ToolError("Not run: the user declined to open the approval page. The server was not called."), nil
		case "cancel":
			c.Outcome = "cancelled"
			return call.ToolError("Not run: the user cancelled the approval. The server was not called."), nil
		}
	}
	req, err := a.Approvals.Resume(ctx, id, ac, a.ResumeWait)
	switch {
	case errors.Is(err, approval.ErrUsed):
		c.Outcome = "input_required"
		return call.ToolError("Not run: the approval of this call was used already; it allows one call. Retry without the requestState to ask for approval again. The server was not called."), nil
	case errors.Is(err, approval.ErrNotFound), errors.Is(err, approval.ErrExpired):
		c.Outcome = "timeout"
		return call.ToolError("Not run: the approval request of this call lapsed. Retry without the requestState to ask for approval again. The server was not called."), nil
	case errors.Is(err, approval.ErrMismatch):
		a.Logger.WarnContext(ctx, "requestState refused", "reason", "approval of another call", "tool", c.Name)
		return nil, requeststate.WireError(err)
	case err != nil && req == nil:
		return nil, internal("approval: %v", err)
	}
	switch req.State {
	case approval.Used:
		c.RequestState = ""
		if len(c.InputResponses) > 0 {
			rest := maps.Clone(c.InputResponses)
			delete(rest, approval.InputKey)
			if len(rest) == 0 {
				rest = nil
			}
			c.InputResponses = rest
		}
		return a.run(ctx, c, req, next)
	case approval.Pending:
		return a.inputRequired(c, a.pageURL(), req)
	}
	return a.notRun(c, req), nil
}

// askToOpen asks the client to open the page: one that answers in a
// later round gets input_required with the link; one that answers within
// the call is held until the request is decided or lapses.
func (a *Approve) askToOpen(ctx context.Context, c *call.Call, ac approval.Call, base string, req *approval.Request, next call.Handler) (json.RawMessage, error) {
	// Asked within the call, the question carries the id its completion
	// notification names (2025-11-25).
	p, err := approval.LegacyURLElicitation(base, req)
	if err != nil {
		return nil, internal("approval page: %v", err)
	}
	res, err := c.Client.Conn.Ask(ctx, "elicitation/create", p)
	switch {
	case errors.Is(err, call.ErrRound):
		return a.inputRequired(c, base, req)
	case err != nil:
		if ctx.Err() != nil {
			c.Outcome = "cancelled"
			return nil, ctx.Err()
		}
		if !errors.Is(err, call.ErrCannotAsk) {
			a.Logger.InfoContext(ctx, "URL elicitation failed; the client is told to retry", "tool", c.Name, "error", err)
		}
		return a.retryText(c, base, req)
	}
	er, _ := res.(*mcp.ElicitResult)
	action := "decline"
	if er != nil {
		action = er.Action
	}
	switch action {
	case "decline":
		c.Outcome = "declined"
		return call.ToolError("Not run: the user declined to open the approval page. The server was not called."), nil
	case "cancel":
		c.Outcome = "cancelled"
		return call.ToolError("Not run: the user cancelled the approval. The server was not called."), nil
	}
	wctx, cancel := context.WithDeadline(ctx, req.Expires)
	_, err = a.Approvals.Wait(wctx, req.ID)
	cancel()
	if err != nil && ctx.Err() != nil {
		c.Outcome = "cancelled"
		return nil, ctx.Err()
	}
	c.Client.Conn.Completed(ctx, req.ID)
	r, err := a.Approvals.Resume(ctx, req.ID, ac, 0)
	switch {
	case errors.Is(err, approval.ErrUsed):
		c.Outcome = "input_required"
		return call.ToolError("Not run: the approval of this call was used by another call. Retry it to ask for approval again. The server was not called."), nil
	case err != nil:
		c.Outcome = "timeout"
		return call.ToolError("Not run: the approval request of this call lapsed. Retry it to ask for approval again. The server was not called."), nil
	case r.State == approval.Used:
		return a.run(ctx, c, r, next)
	case r.State == approval.Pending:
		r = r.Clone()
		r.State = approval.Expired // Wait returned at its expiry
	}
	return a.notRun(c, r), nil
}

func internal(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(format, args...)}
}
