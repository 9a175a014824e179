package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/requeststate"
)

// DefaultResumeWait is how long the approve stage waits for a decision
// when a 2026-07-28 client retries with the requestState of its approval.
const DefaultResumeWait = 10 * time.Second

// ApproveOptions configure the approve stage.
type ApproveOptions struct {
	// Approvals hold the calls that wait for a person. Required.
	Approvals *approval.Service
	// PageURL returns the page's root URL as people reach it
	// ("http://127.0.0.1:7780/ui"); the links clients get start with it.
	PageURL func() string
	// Ring and Audience seal the requestState of a URL-mode elicitation,
	// as package bridge seals its own (nil Ring: requeststate.Default()).
	Ring     *requeststate.Ring
	Audience string
	// ResumeWait bounds how long a 2026-07-28 client's retry waits for the
	// decision. Zero means DefaultResumeWait.
	ResumeWait time.Duration
	// Logger receives refused state. Nil discards.
	Logger *slog.Logger
}

// statePrefix marks the approve stage's own payload in a sealed
// requestState, so that the bridge's and other stages' states pass by.
const statePrefix = "approval:"

// Approve is the out-of-band approval stage. A tools/call whose decision
// is Confirm (not a dry run) and that nobody confirmed in-band becomes an
// approval request (package approval) bound to the principal, the server,
// the tool and the arguments, and waits for a person on the gateway's page:
//
//   - a 2026-07-28 client that declared elicitation.url on the request gets
//     input_required with a URL-mode elicitation under approval.InputKey and
//     a sealed requestState; its retry waits up to ResumeWait for the
//     decision and runs the call once it is approved;
//   - a 2025-11-25 session that declared URL elicitation is asked mid-call
//     and waits for the decision (until the request expires), then is told
//     it is complete;
//   - any other client gets a tool error saying where to approve and to
//     retry with the same arguments (approval.RetryText).
//
// An approved call runs once: the retry that uses the approval sets
// Call.Confirmation (By "page") and goes on; another retry asks anew.
// Denied, expired, declined and cancelled calls end here with a tool error
// that says so; the upstream is never called for them.
func Approve(o ApproveOptions) Stage {
	if o.ResumeWait <= 0 {
		o.ResumeWait = DefaultResumeWait
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Audience == "" {
		o.Audience = "preflight-gateway"
	}
	a := &approver{o: o}
	return Stage{Name: "approve", Wrap: func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, c *Call) (mcp.Result, error) {
			d := c.Decision
			if c.Method != upstream.MethodCallTool || c.Tool == nil || d == nil || d.Verdict != Confirm || d.DryRun || c.Confirmation != nil {
				return next.Serve(ctx, c)
			}
			return a.serve(ctx, c, next)
		})
	}}
}

type approver struct{ o ApproveOptions }

func (a *approver) serve(ctx context.Context, c *Call, next Handler) (mcp.Result, error) {
	call := a.callOf(c)
	id, ok, err := a.ownState(c)
	if err != nil {
		a.o.Logger.WarnContext(ctx, "requestState refused", "reason", requeststate.ReasonOf(err), "tool", c.Name, "error", err)
		return nil, requeststate.WireError(err)
	}
	if ok {
		return a.resume(ctx, c, call, id, next)
	}
	req, err := a.o.Approvals.Ask(ctx, call)
	switch {
	case errors.Is(err, approval.ErrFull):
		c.Outcome = "error"
		return toolError(c, "Not run: too many calls of yours are waiting for approval; decide or let them lapse on the approval page, then retry. The server was not called."), nil
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
	if c.Client.Capabilities == nil && c.Wire != nil {
		c.Client.Capabilities = wireCapabilities(c.Wire.Params)
	}
	switch {
	case c.Client.Modern && approval.SupportsURL(c.Client.Capabilities):
		return a.inputRequired(c, base, req)
	case !c.Client.Modern && c.Client.Session != nil && approval.SupportsURL(c.Client.Capabilities):
		return a.askMidCall(ctx, c, call, base, req, next)
	}
	text, err := approval.RetryText(base, req)
	if err != nil {
		return nil, internal("approval page: %v", err)
	}
	c.Outcome = "input_required"
	return toolError(c, text), nil
}

// callOf is the call as package approval knows it.
func (a *approver) callOf(c *Call) approval.Call {
	call := approval.Call{Principal: c.Client.Principal, Server: c.Upstream.Name(), Tool: c.Target,
		Arguments: c.Arguments, Reason: c.Decision.Reason}
	if len(call.Arguments) == 0 {
		call.Arguments = json.RawMessage("{}")
	}
	if r := c.Resolution; r != nil {
		call.Effect = r.Hints.Effect
		if call.Effect == "" {
			call.Effect = hints.Derive(r.Annotations).Effect
		}
	}
	return call
}

func (a *approver) pageURL() string {
	if a.o.PageURL == nil {
		return ""
	}
	return a.o.PageURL()
}

// run forwards an approved call.
func (a *approver) run(ctx context.Context, c *Call, req *approval.Request, next Handler) (mcp.Result, error) {
	c.Confirmation = &Confirmation{By: "page", Approver: req.DecidedBy.String(), RequestID: req.ID}
	return next.Serve(ctx, c)
}

// notRun ends a call whose request was denied or lapsed.
func (a *approver) notRun(c *Call, req *approval.Request) mcp.Result {
	switch req.State {
	case approval.Denied:
		c.Outcome = "denied"
	case approval.Expired:
		c.Outcome = "timeout"
	default:
		c.Outcome = "input_required"
	}
	return toolError(c, approval.OutcomeText(req))
}

// binding binds the stage's requestState to the call as the client made it.
func (a *approver) binding(c *Call) (requeststate.Binding, error) {
	b := requeststate.Binding{Method: c.Method, Target: c.Name, Audience: a.o.Audience, Principal: c.Client.Principal}
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
func (a *approver) ownState(c *Call) (string, bool, error) {
	if c.RequestState == "" {
		return "", false, nil
	}
	b, err := a.binding(c)
	if err != nil {
		return "", false, &requeststate.Error{Reason: requeststate.ReasonArguments, Detail: err.Error()}
	}
	raw, err := a.o.Ring.Open(c.RequestState, b)
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
func (a *approver) inputRequired(c *Call, base string, req *approval.Request) (mcp.Result, error) {
	p, err := approval.URLElicitation(base, req)
	if err != nil {
		return nil, internal("approval page: %v", err)
	}
	b, err := a.binding(c)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: " + err.Error()}
	}
	token, err := a.o.Ring.Seal(b, []byte(statePrefix+req.ID))
	if err != nil {
		return nil, internal("sealing requestState: %v", err)
	}
	c.Outcome = "input_required"
	return &InputRequiredResult{ResultType: "input_required",
		InputRequests: mcp.InputRequestMap{approval.InputKey: p}, RequestState: token}, nil
}

// resume serves a 2026-07-28 client's retry that carries the stage's
// requestState: the user's answer to the URL elicitation, then the
// request's decision.
func (a *approver) resume(ctx context.Context, c *Call, call approval.Call, id string, next Handler) (mcp.Result, error) {
	if er, ok := c.InputResponses[approval.InputKey].(*mcp.ElicitResult); ok {
		switch er.Action {
		case "decline":
			c.Outcome = "declined"
			return toolError(c, "Not run: the user declined to open the approval page. The server was not called."), nil
		case "cancel":
			c.Outcome = "cancelled"
			return toolError(c, "Not run: the user cancelled the approval. The server was not called."), nil
		}
	}
	req, err := a.o.Approvals.Resume(ctx, id, call, a.o.ResumeWait)
	switch {
	case errors.Is(err, approval.ErrUsed):
		c.Outcome = "input_required"
		return toolError(c, "Not run: the approval of this call was used already; it allows one call. Retry without the requestState to ask for approval again. The server was not called."), nil
	case errors.Is(err, approval.ErrNotFound), errors.Is(err, approval.ErrExpired):
		c.Outcome = "timeout"
		return toolError(c, "Not run: the approval request of this call lapsed. Retry without the requestState to ask for approval again. The server was not called."), nil
	case errors.Is(err, approval.ErrMismatch):
		a.o.Logger.WarnContext(ctx, "requestState refused", "reason", "approval of another call", "tool", c.Name)
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

// askMidCall asks a 2025-11-25 session to open the page, then holds the
// call until the request is decided or lapses.
func (a *approver) askMidCall(ctx context.Context, c *Call, call approval.Call, base string, req *approval.Request, next Handler) (mcp.Result, error) {
	p, err := approval.LegacyURLElicitation(base, req)
	if err != nil {
		return nil, internal("approval page: %v", err)
	}
	res, err := c.Client.Session.Elicit(ctx, p)
	if err != nil {
		if ctx.Err() != nil {
			c.Outcome = "cancelled"
			return nil, ctx.Err()
		}
		// The client would not take it: fall back to the retry.
		a.o.Logger.InfoContext(ctx, "URL elicitation failed; the client is told to retry", "tool", c.Name, "error", err)
		text, terr := approval.RetryText(base, req)
		if terr != nil {
			return nil, internal("approval page: %v", terr)
		}
		c.Outcome = "input_required"
		return toolError(c, text), nil
	}
	switch res.Action {
	case "decline":
		c.Outcome = "declined"
		return toolError(c, "Not run: the user declined to open the approval page. The server was not called."), nil
	case "cancel":
		c.Outcome = "cancelled"
		return toolError(c, "Not run: the user cancelled the approval. The server was not called."), nil
	}
	wctx, cancel := context.WithDeadline(ctx, req.Expires)
	_, err = a.o.Approvals.Wait(wctx, req.ID)
	cancel()
	if err != nil && ctx.Err() != nil {
		c.Outcome = "cancelled"
		return nil, ctx.Err()
	}
	_ = c.Client.Session.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: req.ID})
	r, err := a.o.Approvals.Resume(ctx, req.ID, call, 0)
	switch {
	case errors.Is(err, approval.ErrUsed):
		c.Outcome = "input_required"
		return toolError(c, "Not run: the approval of this call was used by another call. Retry it to ask for approval again. The server was not called."), nil
	case err != nil:
		c.Outcome = "timeout"
		return toolError(c, "Not run: the approval request of this call lapsed. Retry it to ask for approval again. The server was not called."), nil
	case r.State == approval.Used:
		return a.run(ctx, c, r, next)
	case r.State == approval.Pending:
		r = r.Clone()
		r.State = approval.Expired // Wait returned at its expiry
	}
	return a.notRun(c, r), nil
}

// wireCapabilities decodes the client capabilities a 2026-07-28 request
// declared in its _meta, for a call on the passthrough path (which does not
// decode them unless a stage needs them); nil when there are none.
func wireCapabilities(params json.RawMessage) *mcp.ClientCapabilities {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil
	}
	raw, ok := p.Meta[mcp.MetaKeyClientCapabilities]
	if !ok {
		return nil
	}
	var caps mcp.ClientCapabilities
	if json.Unmarshal(raw, &caps) != nil {
		return nil
	}
	return &caps
}

// InputRequiredResult is an input_required result the gateway makes
// itself, the same on the SDK's path and the passthrough path.
type InputRequiredResult struct {
	mcp.ResultBase
	ResultType    string              `json:"resultType"`
	InputRequests mcp.InputRequestMap `json:"inputRequests"`
	RequestState  string              `json:"requestState"`
}

// ToolErrorResult is a tool error the gateway makes itself: resultType is
// "complete" for a 2026-07-28 client and absent otherwise.
type ToolErrorResult struct {
	mcp.ResultBase
	ResultType string        `json:"resultType,omitempty"`
	Content    []mcp.Content `json:"content"`
	IsError    bool          `json:"isError"`
}

func toolError(c *Call, text string) mcp.Result {
	r := &ToolErrorResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: true}
	if c.Client.Modern {
		r.ResultType = "complete"
	}
	return r
}

func internal(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(format, args...)}
}
