package stage

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/state"
	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/requeststate"
)

// ConfirmKey is the inputRequests key of the gateway's confirmation
// question (keys under "preflight/" are the gateway's own).
const ConfirmKey = "preflight/confirm"

// confirmField is the form's one property: true runs the call.
const confirmField = "confirm"

// Defaults of [Ask].
const (
	DefaultConfirmTTL  = 5 * time.Minute
	DefaultConfirmWait = 2 * time.Minute
)

// Resumer opens the forwarder's own requestState of a retry: the
// confirmation recorded when it was sealed for this very call (nil when
// the call had none) and the single-use nonce sealed with it. An error
// means the state is not valid for this call.
type Resumer interface {
	Resumed(c *call.Call) (conf *call.Confirmation, nonce string, err error)
}

// confirmState is the payload of the confirmation's requestState.
type confirmState struct {
	Kind    string `json:"k"` // "confirm"
	Nonce   string `json:"n"`
	Expires int64  `json:"e"` // Unix milliseconds
}

const confirmKind = "confirm"

// Ask is the in-band confirmation stage: a call whose decision is Confirm
// (not dry-run, not out of band) is confirmed by the client that made it,
// when the client can be asked (it declared form elicitation).
//
// The question is a form that shows the call (server, tool, the arguments
// as an approver sees them, why it is asked), put through the client's
// [call.Conn]. A client that answers within the call is waited for at most
// Wait. A client that answers in a later round gets input_required with a
// requestState sealed for the principal, the tool and a digest of the
// arguments, carrying a single-use nonce and its own expiry; its retry
// with "accept" runs the call once. "decline" and "cancel" end the call
// with a tool error, the upstream untouched. A client that cannot be
// asked, and a decision that demands a person out of band, pass on
// unconfirmed, to approve or the confirmed guard.
//
// A retry that carries the forwarder's state (its upstream asked questions
// after the confirmation) is confirmed by what that state recorded, once
// per round ([Resumer]).
type Ask struct {
	// Ring seals the confirmation's requestState. Nil means
	// requeststate.Default().
	Ring *requeststate.Ring
	// Audience is the gateway's name. Confirmation state is sealed for
	// Audience + "/confirm", so that it is never taken for the
	// forwarder's own state, nor that for it. Empty means
	// "preflight-gateway".
	Audience string
	// Nonces make each confirmation usable once. Required.
	Nonces state.Nonces
	// TTL is how long a client has to answer in a later round. Zero means
	// DefaultConfirmTTL; it cannot exceed the ring's own lifetime.
	TTL time.Duration
	// Wait bounds how long an answer within the call is awaited. Zero
	// means DefaultConfirmWait.
	Wait time.Duration
	// Resumer opens the forwarder's requestState of a confirmed call that
	// its upstream asked questions about. Nil means such retries are asked
	// to confirm again.
	Resumer Resumer
	// Logger receives refused answers. Nil discards them.
	Logger *slog.Logger
}

// Name implements call.Stage.
func (*Ask) Name() string { return "ask" }

// Methods implements call.Scoped.
func (*Ask) Methods() []string { return []string{call.ToolsCall} }

func (a *Ask) defaults() {
	if a.Audience == "" {
		a.Audience = "preflight-gateway"
	}
	if a.TTL <= 0 {
		a.TTL = DefaultConfirmTTL
	}
	if a.Wait <= 0 {
		a.Wait = DefaultConfirmWait
	}
	if a.Logger == nil {
		a.Logger = slog.New(slog.DiscardHandler)
	}
}

// NewAsk returns the ask stage with o's zero fields set to their defaults.
func NewAsk(o Ask) *Ask {
	o.defaults()
	return &o
}

// Serve implements call.Stage.
func (a *Ask) Serve(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	d := c.Decision
	if d == nil || d.Verdict != call.Confirm || d.DryRun || c.Confirmation != nil {
		return next.Serve(ctx, c)
	}
	if c.RequestState != "" {
		return a.retry(ctx, c, next)
	}
	if d.OutOfBand || !formElicitation(c.Client.Capabilities) || a.Nonces == nil {
		return next.Serve(ctx, c)
	}
	return a.ask(ctx, c, next)
}

// ask puts the confirmation question to the client.
func (a *Ask) ask(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	wctx, cancel := context.WithTimeout(ctx, a.Wait)
	res, err := c.Client.Conn.Ask(wctx, "elicitation/create", a.question(c))
	timedOut := wctx.Err() != nil // read before cancel, which sets it
	cancel()
	what := fmt.Sprintf("%s on server %s", text.Clip(c.Name, quoteLimit), c.Tool.Upstream)
	switch {
	case errors.Is(err, call.ErrRound):
		return a.inRound(ctx, c)
	case errors.Is(err, call.ErrCannotAsk):
		return next.Serve(ctx, c)
	case err != nil:
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if timedOut {
			c.Outcome = "timeout"
			return call.ToolError(fmt.Sprintf("The call of %s was not run: it was not confirmed within %s. The upstream was not contacted.", what, a.Wait)), nil
		}
		a.Logger.InfoContext(ctx, "the client could not be asked to confirm", "tool", text.Clip(c.Name, quoteLimit), "error", err)
		return next.Serve(ctx, c)
	}
	action, err := ConfirmAnswer(res)
	if err != nil {
		action = "decline"
	}
	if out, done := a.refused(c, action, what); done {
		return out, nil
	}
	c.Confirmation = &call.Confirmation{By: "client", Approver: c.Client.Principal, RequestID: randomID()}
	return next.Serve(ctx, c)
}

// refused ends a declined or cancelled call.
func (a *Ask) refused(c *call.Call, action, what string) (json.RawMessage, bool) {
	switch action {
	case "decline":
		c.Outcome = "declined"
		return call.ToolError(fmt.Sprintf("The call of %s was not run: the confirmation was declined. The upstream was not contacted.", what)), true
	case "cancel":
		c.Outcome = "cancelled"
		return call.ToolError(fmt.Sprintf("The call of %s was not run: the confirmation was cancelled. The upstream was not contacted.", what)), true
	}
	return nil, false
}

// formElicitation reports whether caps declare form elicitation (an empty
// elicitation object means form).
func formElicitation(caps *mcp.ClientCapabilities) bool {
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	e := caps.Elicitation
	return e.Form != nil || e.URL == nil
}

func (a *Ask) binding(c *call.Call) (requeststate.Binding, error) {
	b := requeststate.Binding{Method: c.Method, Target: c.Name, Audience: a.Audience + "/confirm", Principal: c.Client.Principal}
	var args any
	if len(c.Arguments) > 0 {
		args = c.Arguments
	}
	d, err := requeststate.ArgumentsDigest(args)
	b.Arguments = d
	return b, err
}

// question is the form the client is shown.
func (a *Ask) question(c *call.Call) *mcp.ElicitParams {
	var b strings.Builder
	fmt.Fprintf(&b, "Confirm this call before the gateway runs it.\nServer: %s\nTool: %s\nWhy you are asked: %s.", c.Tool.Upstream, text.Clip(c.Name, quoteLimit), c.Decision.Reason)
	args, more, err := approval.Preview(c.Arguments, nil, nil, 0, 0)
	switch {
	case err != nil:
		b.WriteString("\nArguments: (not valid JSON)")
	case len(args) == 0:
		b.WriteString("\nArguments: none")
	default:
		b.WriteString("\nArguments:")
		for _, x := range args {
			v := x.Value
			if x.Withheld {
				v = approval.Withheld
			} else if x.Clipped {
				v += "…"
			}
			fmt.Fprintf(&b, "\n  %s: %s", x.Name, v)
		}
		if more > 0 {
			fmt.Fprintf(&b, "\n  (%d more not shown)", more)
		}
	}
	return &mcp.ElicitParams{
		Mode:    "form",
		Message: b.String(),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				confirmField: map[string]any{"type": "boolean", "title": "Run this call", "default": false,
					"description": "Accept with this checked to run the call once; decline or cancel to leave it unrun."},
			},
			"required": []string{confirmField},
		},
	}
}

// inRound ends the call with the question as input_required, for a client
// that answers in a later round, with the state its retry must carry.
func (a *Ask) inRound(ctx context.Context, c *call.Call) (json.RawMessage, error) {
	nonce, err := a.Nonces.Issue(ctx)
	if err != nil {
		return nil, unavailable(err)
	}
	b, err := a.binding(c)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: arguments: " + err.Error()}
	}
	payload, _ := json.Marshal(confirmState{Kind: confirmKind, Nonce: nonce, Expires: time.Now().Add(a.TTL).UnixMilli()})
	token, err := a.Ring.Seal(b, payload)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "sealing requestState: " + err.Error()}
	}
	qs, err := call.Questions(mcp.InputRequestMap{ConfirmKey: a.question(c)})
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encoding the confirmation: " + err.Error()}
	}
	c.Outcome = "input_required"
	return call.InputRequired(qs, token), nil
}

// retry serves a retry that carries a requestState: the answer to the
// gateway's confirmation, or a round of the forwarder's own.
func (a *Ask) retry(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	b, err := a.binding(c)
	if err != nil {
		return nil, requeststate.WireError(err)
	}
	raw, err := a.Ring.Open(c.RequestState, b)
	if requeststate.ReasonOf(err) == requeststate.ReasonAudience {
		return a.resumed(ctx, c, next)
	}
	if err != nil {
		a.Logger.WarnContext(ctx, "confirmation requestState refused", "reason", requeststate.ReasonOf(err), "tool", text.Clip(c.Name, quoteLimit), "error", err)
		return nil, requeststate.WireError(err)
	}
	var st confirmState
	if err := json.Unmarshal(raw, &st); err != nil || st.Kind != confirmKind || st.Nonce == "" {
		a.Logger.WarnContext(ctx, "confirmation requestState refused", "reason", "payload", "tool", text.Clip(c.Name, quoteLimit))
		return nil, requeststate.WireError(&requeststate.Error{Reason: requeststate.ReasonMalformed, Detail: "payload"})
	}
	what := fmt.Sprintf("%s on server %s", text.Clip(c.Name, quoteLimit), c.Tool.Upstream)
	if time.Now().UnixMilli() > st.Expires {
		c.Outcome = "timeout"
		return call.ToolError(fmt.Sprintf("The call of %s was not run: its confirmation expired (a confirmation is valid for %s). The upstream was not contacted; call the tool again to be asked again.", what, a.TTL)), nil
	}
	action, err := ConfirmAnswer(c.InputResponses[ConfirmKey])
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: inputResponses[\"" + ConfirmKey + "\"]: " + err.Error()}
	}
	if out, done := a.refused(c, action, what); done {
		return out, nil
	}
	ttl := time.Until(time.UnixMilli(st.Expires)) + requeststate.DefaultSkew
	first, err := a.Nonces.Use(ctx, st.Nonce, ttl.Round(time.Millisecond)+time.Millisecond)
	if errors.Is(err, state.ErrUnavailable) {
		return nil, unavailable(err)
	}
	if err != nil || !first {
		a.Logger.WarnContext(ctx, "confirmation requestState refused", "reason", "already used", "tool", text.Clip(c.Name, quoteLimit), "error", err)
		return nil, requeststate.WireError(&requeststate.Error{Reason: requeststate.ReasonMalformed, Detail: "confirmation already used"})
	}
	c.Confirmation = &call.Confirmation{By: "client", Approver: c.Client.Principal, RequestID: st.Nonce}
	c.RequestState = ""
	c.InputResponses = withoutKey(c.InputResponses, ConfirmKey)
	return next.Serve(ctx, c)
}

// resumed serves a retry with the forwarder's own state: a round of the
// upstream's questions after the call was confirmed. State sealed for
// another audience still passes on unconfirmed, for the stage that sealed
// it (each stage seals for its own audience).
func (a *Ask) resumed(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	if a.Resumer == nil {
		return next.Serve(ctx, c) // the guard refuses it
	}
	conf, nonce, err := a.Resumer.Resumed(c)
	if requeststate.ReasonOf(err) == requeststate.ReasonAudience {
		// Neither the confirmation's state nor the forwarder's: a later
		// stage's (approve seals its own), or refused by it.
		return next.Serve(ctx, c)
	}
	if err != nil {
		a.Logger.WarnContext(ctx, "requestState refused", "reason", requeststate.ReasonOf(err), "tool", text.Clip(c.Name, quoteLimit), "error", err)
		return nil, requeststate.WireError(err)
	}
	if conf == nil || nonce == "" || (c.Decision.OutOfBand && conf.By == "client") {
		// State of the call from before it needed confirmation: ask now,
		// or leave it to the stages after.
		if !c.Decision.OutOfBand && formElicitation(c.Client.Capabilities) && a.Nonces != nil {
			return a.inRound(ctx, c)
		}
		return next.Serve(ctx, c)
	}
	first, err := a.Nonces.Use(ctx, nonce, requeststate.DefaultTTL+requeststate.DefaultSkew)
	if errors.Is(err, state.ErrUnavailable) {
		return nil, unavailable(err)
	}
	if err != nil || !first {
		a.Logger.WarnContext(ctx, "requestState refused", "reason", "round already answered", "tool", text.Clip(c.Name, quoteLimit), "error", err)
		return nil, requeststate.WireError(&requeststate.Error{Reason: requeststate.ReasonMalformed, Detail: "round already answered"})
	}
	c.Confirmation = conf
	return next.Serve(ctx, c)
}

// ConfirmAnswer reads the client's answer to the confirmation form:
// "accept" only for an accepted form whose confirm field is true,
// "decline" for a decline or an accepted form without it, "cancel" for a
// cancel. Anything else is an error that says what was expected.
func ConfirmAnswer(r mcp.InputResponse) (string, error) {
	if r == nil {
		return "", errors.New("missing: answer the confirmation question of the previous result (its inputRequests)")
	}
	e, ok := r.(*mcp.ElicitResult)
	if !ok || e == nil {
		return "", errors.New("not an elicitation result: answer with action accept, decline or cancel")
	}
	switch e.Action {
	case "accept":
		if v, ok := e.Content[confirmField].(bool); ok && v {
			return "accept", nil
		}
		return "decline", nil
	case "decline", "cancel":
		return e.Action, nil
	}
	return "", errors.New("action must be accept, decline or cancel")
}

// withoutKey returns m without key (nil when nothing is left).
func withoutKey(m mcp.InputResponseMap, key string) mcp.InputResponseMap {
	if _, ok := m[key]; !ok {
		return m
	}
	out := make(mcp.InputResponseMap, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// unavailable is the client's error when the shared state cannot be
// reached: the call is neither asked nor run.
func unavailable(err error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the call needs confirmation, and the gateway cannot record it: " + err.Error()}
}

func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
