package pipeline

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
	"github.com/preflightmcp/preflight/gateway/internal/rawjson"
	"github.com/preflightmcp/preflight/gateway/internal/state"
	"github.com/preflightmcp/preflight/requeststate"
)

// ConfirmKey is the inputRequests key of the gateway's confirmation
// question (keys under "preflight/" are the gateway's own).
const ConfirmKey = "preflight/confirm"

// confirmField is the form's one property: true runs the call.
const confirmField = "confirm"

// Defaults of [AskOptions].
const (
	DefaultConfirmTTL  = 5 * time.Minute
	DefaultConfirmWait = 2 * time.Minute
)

// AskOptions configure [Ask].
type AskOptions struct {
	// Ring seals the confirmation's requestState. Nil means
	// requeststate.Default().
	Ring *requeststate.Ring
	// Audience is the gateway's name. Confirmation state is sealed for
	// Audience + "/confirm", so that it is never taken for the forward
	// stage's own state, nor that for it. Empty means
	// "preflight-gateway".
	Audience string
	// Nonces make each confirmation usable once. Required.
	Nonces state.Nonces
	// TTL is how long a 2026-07-28 client has to answer. Zero means
	// DefaultConfirmTTL; it cannot exceed the ring's own lifetime.
	TTL time.Duration
	// Wait bounds how long a legacy client's answer is awaited within the
	// call. Zero means DefaultConfirmWait.
	Wait time.Duration
	// Resumer opens the forward stage's requestState of a confirmed call
	// that its upstream asked questions about. Nil means such retries are
	// asked to confirm again.
	Resumer Resumer
	// Logger receives refused answers. Nil discards them.
	Logger *slog.Logger
}

// Resumer opens the forward stage's own requestState of a 2026-07-28
// retry: the confirmation recorded when it was sealed for this very call
// (nil when the call had none) and the single-use nonce sealed with it. An
// error means the state is not valid for this call.
type Resumer interface {
	Resumed(c *Call) (conf *Confirmation, nonce string, err error)
}

// confirmState is the payload of the confirmation's requestState.
type confirmState struct {
	Kind    string `json:"k"` // "confirm"
	Nonce   string `json:"n"`
	Expires int64  `json:"e"` // Unix milliseconds
}

const confirmKind = "confirm"

type asker struct {
	AskOptions
}

// Ask is the in-band confirmation stage: a call whose decision is Confirm
// (not dry-run, not out of band) is confirmed by the client that made it,
// when the client can be asked.
//
//   - A 2026-07-28 client that declared form elicitation gets
//     input_required with a form that shows the call (server, tool, the
//     arguments as an approver sees them, why it is asked) and a
//     requestState sealed for the principal, the tool and a digest of the
//     arguments, carrying a single-use nonce and its own expiry. Its retry
//     with "accept" runs the call once; "decline" and "cancel" end it with
//     a tool error, the upstream untouched.
//   - A legacy client that declared elicitation is asked within its call,
//     for at most Wait.
//   - Any other client, and a decision that demands a person out of band,
//     pass on unconfirmed, to the approve stage or the confirmed guard.
//
// A retry that carries the forward stage's state (its upstream asked
// questions after the confirmation) is confirmed by what that state
// recorded, once per round ([Resumer]).
func Ask(o AskOptions) Stage {
	if o.Audience == "" {
		o.Audience = "preflight-gateway"
	}
	if o.TTL <= 0 {
		o.TTL = DefaultConfirmTTL
	}
	if o.Wait <= 0 {
		o.Wait = DefaultConfirmWait
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	a := &asker{o}
	return Stage{Name: "ask", Wrap: func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, c *Call) (mcp.Result, error) {
			d := c.Decision
			if d == nil || d.Verdict != Confirm || d.DryRun || c.Confirmation != nil {
				return next.Serve(ctx, c)
			}
			if c.Client.Modern {
				if c.RequestState != "" {
					return a.retry(ctx, c, next)
				}
				if d.OutOfBand || !formElicitation(capabilitiesOf(c)) || a.Nonces == nil {
					return next.Serve(ctx, c)
				}
				return a.askModern(ctx, c)
			}
			if d.OutOfBand || c.Client.Session == nil || !formElicitation(c.Client.Capabilities) {
				return next.Serve(ctx, c)
			}
			return a.askLegacy(ctx, c, next)
		})
	}}
}

// capabilitiesOf returns the client's capabilities; on the passthrough
// path they are read from the request's _meta.
func capabilitiesOf(c *Call) *mcp.ClientCapabilities {
	if c.Client.Capabilities != nil || c.Wire == nil {
		return c.Client.Capabilities
	}
	meta, ok, _ := rawjson.Get(c.Wire.Params, "_meta")
	if !ok {
		return nil
	}
	raw, ok, _ := rawjson.Get(meta, mcp.MetaKeyClientCapabilities)
	if !ok {
		return nil
	}
	var caps mcp.ClientCapabilities
	if json.Unmarshal(raw, &caps) != nil {
		return nil
	}
	return &caps
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

func (a *asker) binding(c *Call) (requeststate.Binding, error) {
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
func (a *asker) question(c *Call) *mcp.ElicitParams {
	var b strings.Builder
	fmt.Fprintf(&b, "Confirm this call before the gateway runs it.\nServer: %s\nTool: %s\nWhy you are asked: %s.", c.Tool.Upstream, clip(c.Name), c.Decision.Reason)
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

// inputRequired is the gateway's input_required result for a 2026-07-28
// client.
type inputRequired struct {
	mcp.ResultBase
	ResultType    string                     `json:"resultType"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	RequestState  string                     `json:"requestState"`
}

func (a *asker) askModern(ctx context.Context, c *Call) (mcp.Result, error) {
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
	q, _ := json.Marshal(struct {
		Method string            `json:"method"`
		Params *mcp.ElicitParams `json:"params"`
	}{"elicitation/create", a.question(c)})
	c.Outcome = "input_required"
	return &inputRequired{ResultType: "input_required", InputRequests: map[string]json.RawMessage{ConfirmKey: q}, RequestState: token}, nil
}

// retry serves a 2026-07-28 client's retry that carries a requestState:
// the answer to the gateway's confirmation, or a round of the forward
// stage's own.
func (a *asker) retry(ctx context.Context, c *Call, next Handler) (mcp.Result, error) {
	b, err := a.binding(c)
	if err != nil {
		return nil, requeststate.WireError(err)
	}
	raw, err := a.Ring.Open(c.RequestState, b)
	if requeststate.ReasonOf(err) == requeststate.ReasonAudience {
		return a.resumed(ctx, c, next)
	}
	if err != nil {
		a.Logger.WarnContext(ctx, "confirmation requestState refused", "reason", requeststate.ReasonOf(err), "tool", clip(c.Name), "error", err)
		return nil, requeststate.WireError(err)
	}
	var st confirmState
	if err := json.Unmarshal(raw, &st); err != nil || st.Kind != confirmKind || st.Nonce == "" {
		a.Logger.WarnContext(ctx, "confirmation requestState refused", "reason", "payload", "tool", clip(c.Name))
		return nil, requeststate.WireError(&requeststate.Error{Reason: requeststate.ReasonMalformed, Detail: "payload"})
	}
	what := fmt.Sprintf("%s on server %s", clip(c.Name), c.Tool.Upstream)
	if time.Now().UnixMilli() > st.Expires {
		c.Outcome = "timeout"
		return ToolError(c, fmt.Sprintf("The call of %s was not run: its confirmation expired (a confirmation is valid for %s). The upstream was not contacted; call the tool again to be asked again.", what, a.TTL)), nil
	}
	action, err := ConfirmAnswer(c.InputResponses[ConfirmKey])
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: inputResponses[\"" + ConfirmKey + "\"]: " + err.Error()}
	}
	switch action {
	case "decline":
		c.Outcome = "declined"
		return ToolError(c, fmt.Sprintf("The call of %s was not run: the confirmation was declined. The upstream was not contacted.", what)), nil
	case "cancel":
		c.Outcome = "cancelled"
		return ToolError(c, fmt.Sprintf("The call of %s was not run: the confirmation was cancelled. The upstream was not contacted.", what)), nil
	}
	ttl := time.Until(time.UnixMilli(st.Expires)) + requeststate.DefaultSkew
	first, err := a.Nonces.Use(ctx, st.Nonce, ttl.Round(time.Millisecond)+time.Millisecond)
	if errors.Is(err, state.ErrUnavailable) {
		return nil, unavailable(err)
	}
	if err != nil || !first {
		a.Logger.WarnContext(ctx, "confirmation requestState refused", "reason", "already used", "tool", clip(c.Name), "error", err)
		return nil, requeststate.WireError(&requeststate.Error{Reason: requeststate.ReasonMalformed, Detail: "confirmation already used"})
	}
	c.Confirmation = &Confirmation{By: "client", Approver: c.Client.Principal, RequestID: st.Nonce}
	c.RequestState = ""
	c.InputResponses = withoutConfirm(c.InputResponses)
	return next.Serve(ctx, c)
}

// resumed serves a retry with the forward stage's own state: a round of
// the upstream's questions after the call was confirmed. State sealed for
// another audience still passes on unconfirmed, for the stage that sealed
// it (each stage seals for its own audience).
func (a *asker) resumed(ctx context.Context, c *Call, next Handler) (mcp.Result, error) {
	if a.Resumer == nil {
		return next.Serve(ctx, c) // the guard refuses it
	}
	conf, nonce, err := a.Resumer.Resumed(c)
	if requeststate.ReasonOf(err) == requeststate.ReasonAudience {
		// Neither the confirmation's state nor the forward stage's: a
		// later stage's (approve seals its own), or refused by it.
		return next.Serve(ctx, c)
	}
	if err != nil {
		a.Logger.WarnContext(ctx, "requestState refused", "reason", requeststate.ReasonOf(err), "tool", clip(c.Name), "error", err)
		return nil, requeststate.WireError(err)
	}
	if conf == nil || nonce == "" || (c.Decision.OutOfBand && conf.By == "client") {
		// State of the call from before it needed confirmation: ask now,
		// or leave it to the stages after.
		if !c.Decision.OutOfBand && formElicitation(capabilitiesOf(c)) && a.Nonces != nil {
			return a.askModern(ctx, c)
		}
		return next.Serve(ctx, c)
	}
	first, err := a.Nonces.Use(ctx, nonce, requeststate.DefaultTTL+requeststate.DefaultSkew)
	if errors.Is(err, state.ErrUnavailable) {
		return nil, unavailable(err)
	}
	if err != nil || !first {
		a.Logger.WarnContext(ctx, "requestState refused", "reason", "round already answered", "tool", clip(c.Name), "error", err)
		return nil, requeststate.WireError(&requeststate.Error{Reason: requeststate.ReasonMalformed, Detail: "round already answered"})
	}
	c.Confirmation = conf
	return next.Serve(ctx, c)
}

func (a *asker) askLegacy(ctx context.Context, c *Call, next Handler) (mcp.Result, error) {
	wctx, cancel := context.WithTimeout(ctx, a.Wait)
	res, err := c.Client.Session.Elicit(wctx, a.question(c))
	timedOut := wctx.Err() != nil // read before cancel, which sets it
	cancel()
	what := fmt.Sprintf("%s on server %s", clip(c.Name), c.Tool.Upstream)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if timedOut {
			c.Outcome = "timeout"
			return ToolError(c, fmt.Sprintf("The call of %s was not run: it was not confirmed within %s. The upstream was not contacted.", what, a.Wait)), nil
		}
		a.Logger.InfoContext(ctx, "the client could not be asked to confirm", "tool", clip(c.Name), "error", err)
		return next.Serve(ctx, c)
	}
	action, err := ConfirmAnswer(res)
	if err != nil {
		action = "decline"
	}
	switch action {
	case "decline":
		c.Outcome = "declined"
		return ToolError(c, fmt.Sprintf("The call of %s was not run: the confirmation was declined. The upstream was not contacted.", what)), nil
	case "cancel":
		c.Outcome = "cancelled"
		return ToolError(c, fmt.Sprintf("The call of %s was not run: the confirmation was cancelled. The upstream was not contacted.", what)), nil
	}
	c.Confirmation = &Confirmation{By: "client", Approver: c.Client.Principal, RequestID: randomID()}
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

func withoutConfirm(m mcp.InputResponseMap) mcp.InputResponseMap {
	if _, ok := m[ConfirmKey]; !ok {
		return m
	}
	out := make(mcp.InputResponseMap, len(m))
	for k, v := range m {
		if k != ConfirmKey {
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
