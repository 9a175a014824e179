package stage

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/call"
)

// AuditOptions configure [Audit] and [AuditRefused]; nil means the
// defaults.
type AuditOptions struct {
	// SensitiveArgs name arguments whose values are never recorded, at
	// any level (names that look like credentials never are either).
	SensitiveArgs []string
	// Logger receives records that could not be written. Nil discards.
	Logger *slog.Logger
}

// CodeAuditUnavailable is the JSON-RPC error code of a call refused
// because the audit log could not record it: -32603, internal error. The
// error's data is {"reason": "audit-unavailable"}.
const CodeAuditUnavailable = jsonrpc.CodeInternalError

// ErrAuditUnavailable is the message of a call refused because the audit
// log could not record it.
const ErrAuditUnavailable = "the gateway records this call in its audit log before forwarding it, and the audit log is unavailable: " +
	"the call was not forwarded and the upstream server was not called; try again later"

// Audit records each tools/call as it is forwarded: its principal, server,
// tool, effect, decision and reason, approver, argument digest (and values
// at the full level), outcome, latency, retries and redactions. It belongs
// after the stages that decide and confirm, right before redact.
//
// A call that must be audited (confirmed, destructive or a delete; every
// call when the Auditor fails closed) is written durably before the call
// goes on; if the store cannot take it, the call is refused with a
// JSON-RPC error (code [CodeAuditUnavailable], message
// [ErrAuditUnavailable]) and is never forwarded. Its outcome is written
// when the call comes back; a call whose outcome was never written reads
// as unknown.
//
// Calls that end before they reach this stage (denied, declined, not
// approved, quarantined, refused by disclosure) are recorded by
// [AuditRefused], placed after hold: each call is recorded once, by
// whichever of the two sees it first.
type Audit struct {
	Auditor *audit.Auditor
	Options AuditOptions
}

// Name implements call.Stage.
func (*Audit) Name() string { return "audit" }

// Methods implements call.Scoped.
func (*Audit) Methods() []string { return []string{call.ToolsCall} }

// Serve implements call.Stage.
func (s *Audit) Serve(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	if c.Upstream == nil || c.Audited {
		return next.Serve(ctx, c)
	}
	opts := auditDefaults(&s.Options)
	c.Audited = true
	e, err := s.Auditor.Start(ctx, auditCall(c, opts))
	if err != nil {
		if ctx.Err() != nil {
			c.Outcome = string(audit.OutcomeCancelled)
			return nil, ctx.Err()
		}
		c.Outcome = string(audit.OutcomeError)
		opts.Logger.WarnContext(ctx, "call refused: the audit log could not record it", "server", c.Upstream.Name(), "tool", c.Target, "error", err)
		return nil, &jsonrpc.Error{Code: CodeAuditUnavailable, Message: ErrAuditUnavailable, Data: []byte(`{"reason":"audit-unavailable"}`)}
	}
	res, err := next.Serve(ctx, c)
	if endErr := e.End(ctx, ending(ctx, c, res, err)); endErr != nil {
		opts.Logger.WarnContext(ctx, "the outcome of a call could not be recorded; it reads as unknown", "server", c.Upstream.Name(), "tool", c.Target, "error", endErr)
	}
	return res, err
}

// AuditRefused records the tools/calls that end before they reach [Audit]:
// refused by a stage between hold and audit (disclose, pin, decide, ask,
// approve, confirmed), or failing there. Place it right after hold, and
// [Audit] at its place; a call [Audit] recorded is not recorded again.
// Such calls were never forwarded: the record says how they ended
// (denied, declined, quarantined, input_required for a question the
// gateway asked, ...). A record that cannot be written is logged; the
// call, refused anyway, is answered as it was.
type AuditRefused struct {
	Auditor *audit.Auditor
	Options AuditOptions
}

// Name implements call.Stage.
func (*AuditRefused) Name() string { return "audit.refused" }

// Methods implements call.Scoped.
func (*AuditRefused) Methods() []string { return []string{call.ToolsCall} }

// Serve implements call.Stage.
func (s *AuditRefused) Serve(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	res, err := next.Serve(ctx, c)
	if c.Upstream == nil || c.Audited {
		return res, err
	}
	opts := auditDefaults(&s.Options)
	c.Audited = true
	// Recorded even when the client has gone (a cancelled call).
	if lerr := s.Auditor.Log(context.WithoutCancel(ctx), auditCall(c, opts), ending(ctx, c, res, err)); lerr != nil {
		opts.Logger.WarnContext(ctx, "a call that was not forwarded could not be recorded", "server", c.Upstream.Name(), "tool", c.Target, "error", lerr)
	}
	return res, err
}

func auditDefaults(o *AuditOptions) AuditOptions {
	var opts AuditOptions
	if o != nil {
		opts = *o
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return opts
}

// auditCall describes c for the audit log.
func auditCall(c *call.Call, o AuditOptions) audit.Call {
	ac := audit.Call{Server: c.Upstream.Name(), Tool: c.Target, SignedInAs: c.SignedInAs, Arguments: c.Arguments,
		SensitiveArgs: o.SensitiveArgs, Decision: audit.Allow}
	if ac.Tool == "" {
		ac.Tool = c.Name
	}
	if c.Client != nil {
		ac.Principal = c.Client.Principal
	}
	if c.Flow != nil {
		// The arguments carry a value read elsewhere, maybe a secret: the
		// record says where it came from (the reason), never the values.
		args, _ := c.Args()
		ac.SensitiveArgs = slices.Concat(ac.SensitiveArgs, slices.Collect(maps.Keys(args)))
	}
	r := c.Resolution
	if r == nil {
		r = Static(c.Tool)
	}
	ac.Effect = r.Effect()
	ac.Destructive = !r.Annotations.ReadOnlyHint && r.Annotations.DestructiveHint
	if d := c.Decision; d != nil {
		if v := audit.Decision(d.Verdict); v.Valid() {
			ac.Decision = v
		}
		ac.Reason, ac.DryRun = d.Reason, d.DryRun
		if d.Rule != "" && ac.Reason == "" {
			ac.Reason = "rule " + d.Rule
		}
	}
	if cf := c.Confirmation; cf != nil {
		ac.Approver = cf.Approver
		if ac.Approver == "" {
			ac.Approver = cf.By
		}
	}
	return ac
}

// ending says how c ended, given what the stages after the audit returned.
func ending(ctx context.Context, c *call.Call, res json.RawMessage, err error) audit.Ending {
	en := audit.Ending{Outcome: outcome(ctx, c, res, err), Err: err}
	if c.Attempts > 1 {
		en.Retries = c.Attempts - 1
	}
	if r := c.Redaction; r != nil {
		en.Redactions = make(map[string]int, len(r.Kinds)+1)
		for k, n := range r.Kinds {
			en.Redactions[k] = n
		}
		if r.Withheld {
			en.Redactions["withheld"] = 1
		}
	}
	return en
}

func outcome(ctx context.Context, c *call.Call, res json.RawMessage, err error) audit.Outcome {
	o := audit.Outcome(c.Outcome)
	if err != nil && (o == "" || o == audit.OutcomeOK) {
		switch {
		case errors.Is(err, context.Canceled) || ctx.Err() == context.Canceled:
			return audit.OutcomeCancelled
		case errors.Is(err, context.DeadlineExceeded):
			return audit.OutcomeTimeout
		}
		return audit.OutcomeError
	}
	if o == "" {
		switch {
		case call.IsInputRequired(res):
			return audit.OutcomeInputRequired
		case call.IsToolError(res):
			return audit.OutcomeToolError
		}
		return audit.OutcomeOK
	}
	if !o.Valid() {
		return audit.OutcomeUnknown
	}
	return o
}
