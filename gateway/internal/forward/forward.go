// Package forward holds the final handlers of the gateway's call path: they
// send a judged call to its upstream in the upstream's era and return the
// result, carrying questions across eras, and retry a call after a
// transient failure when that is safe.
//
// Both sides can be of either era, and so can their questions:
//
//   - a 2026-07-28 upstream answers input_required; a client that answers in
//     rounds gets it as input_required, with the upstream's requestState
//     sealed inside the gateway's own (package requeststate: AES-GCM, bound
//     to the method, the tool as the client named it, the arguments, the
//     gateway and the principal), so the client can neither read nor alter
//     it; a client that answers within the call is asked through its
//     [call.Conn], and the gateway retries the upstream with the answers,
//     round after round;
//   - a legacy upstream asks with requests in the middle of its call; a
//     client that answers within the call is asked the same through its
//     Conn; a client that answers in rounds gets input_required, while the
//     upstream's call waits, parked in a [Parking] under an id sealed in
//     the requestState, for the retry that carries the answers.
//
// inputRequests keys are namespaced: keys that start with "preflight/" or
// "preflight." belong to the gateway itself, so an upstream's keys that would collide
// are escaped under "upstream/" on the way to the client and unescaped on
// the way back; other keys pass unchanged. Results pass as the upstream
// sent them, adjusted only as the client's era requires (cache-control of
// resources/read); the entry adds or removes resultType.
//
// A client's answer to an upstream's question crosses the chain as a call
// of its own ([call.Answer]) before it reaches the upstream.
package forward

//lint:file-ignore SA1019 the gateway passes sampling, roots and logging through faithfully; protocol 2026-07-28 deprecates them (SEP-2577) but clients and servers still use them during the deprecation window.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/rawjson"
	"github.com/preflightmcp/preflight/gateway/internal/state"
	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/gateway/internal/tracing"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
	"github.com/preflightmcp/preflight/gateway/internal/wire"
	"github.com/preflightmcp/preflight/requeststate"
)

// Key namespaces of inputRequests.
const (
	// GatewayKeyPrefix starts the keys of the gateway's own questions;
	// gatewayDotPrefix those of its approval (approval.InputKey).
	GatewayKeyPrefix = "preflight/"
	gatewayDotPrefix = "preflight."
	// escapePrefix escapes an upstream's key that would look like one of
	// the gateway's.
	escapePrefix = "upstream/"
)

// Defaults of [Options].
const (
	DefaultMaxRounds = 10
	maxBackoff       = time.Second
)

// Options configure [New]. A nil *Options means defaults.
type Options struct {
	// Ring seals the requestState the gateway gives clients. Nil means
	// requeststate.Default() (a random key for this process).
	Ring *requeststate.Ring
	// Audience is the gateway's name in sealed state. Empty means
	// "preflight-gateway".
	Audience string
	// Parking holds legacy upstreams' calls while a client that answers in
	// rounds is asked. Nil means a new [MemoryParking] with its defaults.
	Parking Parking
	// MaxRounds bounds the questions of one call. Zero means
	// DefaultMaxRounds.
	MaxRounds int
	// Logger receives refused state and failed questions. Nil discards.
	Logger *slog.Logger
	// Nonces make each round of a confirmed call's questions answerable
	// once: the state sealed for such a round records the confirmation
	// and a nonce, which [Forward.Resumed] returns for the ask stage to
	// use. Nil means an in-process store.
	Nonces state.Nonces
	// Retry bounds the retries of calls after a transient upstream
	// failure; nil means the defaults of [RetryPolicy].
	Retry *RetryPolicy
	// RetryObserver hears the retries (metrics); nil means nobody.
	RetryObserver RetryObserver
}

// Forward sends calls to their upstreams: the final handlers of the
// chain ([Forward.Finals]).
type Forward struct {
	ring      *requeststate.Ring
	audience  string
	parking   Parking
	maxRounds int
	logger    *slog.Logger
	nonces    state.Nonces
	own       *state.Store // made when Options.Nonces is nil
	retry     *retrier
	subs      subscriptions
	seq       idSeq

	answersMu sync.RWMutex
	answers   call.Handler // the chain an answer crosses
}

// New returns the forwarders.
func New(opts *Options) *Forward {
	var o Options
	if opts != nil {
		o = *opts
	}
	f := &Forward{ring: o.Ring, audience: o.Audience, parking: o.Parking, maxRounds: o.MaxRounds, logger: o.Logger, nonces: o.Nonces}
	if f.nonces == nil {
		f.own = state.NewMemory(nil)
		f.nonces = f.own.Nonces
	}
	if f.audience == "" {
		f.audience = "preflight-gateway"
	}
	if f.parking == nil {
		f.parking = NewMemoryParking(nil)
	}
	if f.maxRounds <= 0 {
		f.maxRounds = DefaultMaxRounds
	}
	if f.logger == nil {
		f.logger = slog.New(slog.DiscardHandler)
	}
	f.retry = newRetrier(o.Retry, o.RetryObserver)
	f.subs.init(f.logger)
	return f
}

// Finals returns the final handler of each method the chain is compiled
// for.
func (f *Forward) Finals() map[string]call.Handler {
	send := &Send{f: f}
	return map[string]call.Handler{
		call.ToolsCall:     send,
		call.PromptsGet:    send,
		call.ResourcesRead: send,
		call.ToolsResolve:  local{},
		call.Complete:      &complete{f: f},
		call.Subscribe:     &subscribe{f: f},
		call.Unsubscribe:   &unsubscribe{f: f},
		call.Answer:        reply{},
	}
}

// SetAnswers gives the forwarders the chain a client's answer to an
// upstream's question crosses before it reaches the upstream.
func (f *Forward) SetAnswers(h call.Handler) {
	f.answersMu.Lock()
	f.answers = h
	f.answersMu.Unlock()
}

// Close ends the calls still parked.
func (f *Forward) Close() {
	f.parking.Close()
	if f.own != nil {
		f.own.Close()
	}
}

// Send is the final handler of tools/call, prompts/get and
// resources/read: it sends the call, again after a transient failure when
// that is safe ([RetryPolicy]).
type Send struct{ f *Forward }

// Serve implements call.Handler.
func (s *Send) Serve(ctx context.Context, c *call.Call) (json.RawMessage, error) {
	return s.f.retry.serve(ctx, c, s.f.once)
}

// once sends the call once, in the span of its round trip when the call
// is traced (tracing.Start); the upstream gets that span's trace context
// in _meta.
func (f *Forward) once(ctx context.Context, c *call.Call) (json.RawMessage, error) {
	c.UpstreamEra = c.Upstream.Era()
	if !tracing.Recording(ctx) {
		return f.send(ctx, c)
	}
	ctx, span := tracing.Start(ctx, "upstream "+c.Method, trace.SpanKindClient,
		tracing.Method.String(c.Method), tracing.Server.String(c.Upstream.Name()),
		tracing.UpEra.String(c.UpstreamEra), tracing.Attempt.Int(c.Attempts))
	defer span.End()
	res, err := f.send(ctx, c)
	tracing.Fail(span, err)
	return res, err
}

// send sends the call by the path its two sides allow: as judged,
// re-encoded, over HTTP between two 2026-07-28 peers or two legacy peers
// of streamable HTTP (passthrough), else through the upstream's SDK
// session (exchange).
func (f *Forward) send(ctx context.Context, c *call.Call) (json.RawMessage, error) {
	switch {
	case passable(c):
		return f.passthrough(ctx, c)
	case sessionPassable(c):
		return f.sessionPassthrough(ctx, c)
	case crossPassable(c):
		return f.crossPassthrough(ctx, c)
	case c.Client.Modern():
		return f.modern(ctx, c)
	}
	return f.legacy(ctx, c, nil)
}

// statePayload is what the gateway seals into the requestState it gives a
// client that answers in rounds.
type statePayload struct {
	Upstream string `json:"u"`
	State    string `json:"s,omitempty"` // the upstream's own requestState
	Parked   string `json:"p,omitempty"` // id of a parked legacy call
	// Confirmed records that the call was confirmed before it was
	// forwarded, and Nonce makes this round answerable once.
	Confirmed *call.Confirmation `json:"c,omitempty"`
	Nonce     string             `json:"n,omitempty"`
}

func (f *Forward) binding(c *call.Call) (requeststate.Binding, error) {
	b := requeststate.Binding{Method: c.Method, Target: c.Name, Audience: f.audience, Principal: c.Client.Principal}
	if c.Method != call.ResourcesRead {
		var args any
		if len(c.Arguments) > 0 {
			args = c.Arguments
		}
		d, err := requeststate.ArgumentsDigest(args)
		if err != nil {
			return b, err
		}
		b.Arguments = d
	}
	return b, nil
}

// open opens the requestState of a client's retry, for the client: an
// error is the one answer every refusal gets.
func (f *Forward) open(c *call.Call) (*statePayload, error) {
	p, err := f.opened(c)
	if err != nil {
		f.logger.Warn("requestState refused", "reason", requeststate.ReasonOf(err), "tool", c.Name, "error", err)
		return nil, requeststate.WireError(err)
	}
	return p, nil
}

// opened opens the requestState of a retry as the forwarder's own; an
// error says why it is not (requeststate.ReasonOf).
func (f *Forward) opened(c *call.Call) (*statePayload, error) {
	b, err := f.binding(c)
	if err != nil {
		return nil, &requeststate.Error{Reason: requeststate.ReasonArguments, Detail: err.Error()}
	}
	raw, err := f.ring.Open(c.RequestState, b)
	if err != nil {
		return nil, err
	}
	var p statePayload
	if err := json.Unmarshal(raw, &p); err != nil || p.Upstream != c.Upstream.Name() {
		return nil, &requeststate.Error{Reason: requeststate.ReasonMalformed, Detail: "payload"}
	}
	return &p, nil
}

func (f *Forward) seal(ctx context.Context, c *call.Call, p statePayload) (string, error) {
	b, err := f.binding(c)
	if err != nil {
		return "", err
	}
	if c.Confirmation != nil {
		if p.Nonce, err = f.nonces.Issue(ctx); err != nil {
			return "", err
		}
		p.Confirmed = c.Confirmation
	}
	raw, _ := json.Marshal(p)
	return f.ring.Seal(b, raw)
}

// Resumed implements stage.Resumer: it opens the requestState of a retry
// as the forwarder's own, for this call, and returns the confirmation it
// recorded and its nonce (nil and "" for a call sealed unconfirmed).
func (f *Forward) Resumed(c *call.Call) (*call.Confirmation, string, error) {
	if c.Upstream == nil {
		return nil, "", &requeststate.Error{Reason: requeststate.ReasonMalformed, Detail: "no upstream"}
	}
	p, err := f.opened(c)
	if err != nil {
		return nil, "", err
	}
	return p.Confirmed, p.Nonce, nil
}

// meta decodes the call's _meta for the SDK's types.
func meta(c *call.Call) (mcp.Meta, error) {
	if len(c.Meta) == 0 {
		return nil, nil
	}
	var m mcp.Meta
	if err := json.Unmarshal(c.Meta, &m); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: c.Method + ": params._meta must be a JSON object"}
	}
	return m, nil
}

// upstreamMeta is the _meta the upstream gets through the SDK: the call's,
// with the trace context of the round trip's span (tracing.Context).
func upstreamMeta(ctx context.Context, c *call.Call) (mcp.Meta, error) {
	m, err := meta(c)
	if err != nil {
		return nil, err
	}
	return tracing.Inject(ctx, m), nil
}

// params are the judged members of the request the passthroughs write,
// with the round trip's trace context.
func params(ctx context.Context, c *call.Call) wire.Params {
	tp, ts := tracing.Context(ctx)
	return wire.Params{Name: c.Target, Arguments: c.Arguments, Meta: c.Meta, TraceParent: tp, TraceState: ts}
}

// modern serves a client that answers in rounds (2026-07-28).
func (f *Forward) modern(ctx context.Context, c *call.Call) (json.RawMessage, error) {
	var st *statePayload
	if c.RequestState != "" {
		var err error
		if st, err = f.open(c); err != nil {
			return nil, err
		}
	}
	answers := unescapeAnswers(c.InputResponses)
	rl := newRelay(c.Client.Conn)
	defer func() { // before the result is written
		rl.flush(ctx)
		c.NotificationsDropped = rl.droppedCount()
	}()

	var (
		ex     upstream.Exchange
		parked *Parked
	)
	if st != nil && st.Parked != "" {
		p, ok := f.parking.Take(st.Parked)
		if !ok {
			f.logger.Warn("requestState refused", "reason", "parked call gone (expired, answered or on another replica)", "tool", c.Name)
			return nil, requeststate.WireError(&requeststate.Error{Reason: requeststate.ReasonExpired, Detail: "parked call gone"})
		}
		parked, ex = p, p.Exchange
		parked.Relay.set(c.Client.Conn)
		rl = parked.Relay
		if err := ex.Answer(answers); err != nil {
			ex.Close()
			return nil, internalError("%v", err)
		}
	} else {
		m, err := upstreamMeta(ctx, c)
		if err != nil {
			return nil, err
		}
		req := upstream.Request{Method: c.Method, Name: c.Target, Arguments: c.Arguments, Meta: m, Peer: rl, Detached: true}
		if st != nil || len(answers) > 0 {
			// A retry (or a first call that already carries answers): a
			// 2026-07-28 upstream gets them with its own state; a legacy
			// upstream's call was never parked, so it starts over.
			if c.Upstream.Era() >= upstream.EraModern {
				var state string
				if st != nil {
					state = st.State
				}
				req.Resume = &upstream.Resume{State: state, Answers: answers}
			}
		}
		if ex, err = c.Upstream.Start(ctx, req); err != nil {
			return nil, upstreamError(c.Upstream, err)
		}
	}

	for round := 0; ; round++ {
		step, err := ex.Next(ctx)
		if err != nil {
			ex.Close()
			return nil, upstreamError(c.Upstream, err)
		}
		if step.Result != nil {
			ex.Close()
			c.Outcome = outcomeOf(step.Result)
			return f.result(c, step.Result), nil
		}
		if ex.Stateless() {
			ex.Close()
			token, err := f.seal(ctx, c, statePayload{Upstream: c.Upstream.Name(), State: step.State})
			if err != nil {
				return nil, internalError("sealing requestState: %v", err)
			}
			c.Outcome = "input_required"
			return inputRequired(step.Questions, token), nil
		}
		// A legacy upstream's call waits for answers: refuse what this
		// client did not declare, park the rest.
		if missing := undeclared(step.Questions, c.Client.Capabilities); missing != "" {
			if round >= f.maxRounds {
				ex.Close()
				return nil, internalError("the upstream asked more than %d questions", f.maxRounds)
			}
			ex.Answer(nil)
			f.logger.Info("upstream question refused: the client did not declare it", "tool", c.Name, "method", missing)
			continue
		}
		p := &Parked{Exchange: ex, Relay: rl, Upstream: c.Upstream.Name(), Principal: c.Client.Principal}
		id, err := f.parking.Park(p)
		if err != nil {
			ex.Close()
			return nil, internalError("%v", err)
		}
		token, err := f.seal(ctx, c, statePayload{Upstream: c.Upstream.Name(), Parked: id})
		if err != nil {
			if p, ok := f.parking.Take(id); ok {
				p.Exchange.Close()
			}
			return nil, internalError("sealing requestState: %v", err)
		}
		c.Outcome = "input_required"
		return inputRequired(step.Questions, token), nil
	}
}

// legacy serves a client that answers within the call (2025-11-25 and
// older): questions become requests through its Conn. first is the step
// of a first round already sent to a 2026-07-28 upstream (its questions),
// nil to start the call.
func (f *Forward) legacy(ctx context.Context, c *call.Call, first *upstream.Step) (json.RawMessage, error) {
	m, err := upstreamMeta(ctx, c)
	if err != nil {
		return nil, err
	}
	if c.Upstream.Era() >= upstream.EraModern {
		m = modernMetaFor(c, m)
	}
	rl := newRelay(c.Client.Conn)
	defer func() { // before the result is written
		rl.flush(ctx)
		c.NotificationsDropped = rl.droppedCount()
	}()
	req := upstream.Request{Method: c.Method, Name: c.Target, Arguments: c.Arguments, Meta: m, Peer: rl}
	var ex upstream.Exchange
	if first == nil {
		if ex, err = c.Upstream.Start(ctx, req); err != nil {
			return nil, upstreamError(c.Upstream, err)
		}
		defer ex.Close()
	}
	step := first
	shed := 0
	for round := 0; ; round++ {
		if step == nil {
			if step, err = ex.Next(ctx); err != nil {
				return nil, upstreamError(c.Upstream, err)
			}
		}
		if step.Result != nil {
			c.Outcome = outcomeOf(step.Result)
			return f.result(c, step.Result), nil
		}
		if round >= f.maxRounds {
			return nil, internalError("%s %q: the upstream asked more than %d rounds of questions", c.Method, text.Clip(c.Name, quoteLimit), f.maxRounds)
		}
		var answers mcp.InputResponseMap
		if len(step.Questions) == 0 {
			// Load shedding: retry after a pause.
			shed++
			if err := sleep(ctx, min(50*time.Millisecond<<min(shed, 5), maxBackoff)); err != nil {
				return nil, err
			}
		} else {
			answers = f.ask(ctx, c, step.Questions)
		}
		if ex == nil {
			// The first round went by the cross passthrough: the
			// upstream's call resumes from its state.
			req.Resume = &upstream.Resume{State: step.State, Answers: answers}
			if ex, err = c.Upstream.Start(ctx, req); err != nil {
				return nil, upstreamError(c.Upstream, err)
			}
			defer ex.Close()
		} else if err := ex.Answer(answers); err != nil && answers != nil {
			return nil, internalError("%v", err)
		}
		step = nil
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ask puts a round's questions to a client that answers within the call,
// concurrently, and returns the answers that crossed the chain; a question
// that fails is left unanswered (and logged): the upstream asks again or
// gives up.
func (f *Forward) ask(ctx context.Context, c *call.Call, qs []*upstream.Question) mcp.InputResponseMap {
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		out = mcp.InputResponseMap{}
	)
	for _, q := range qs {
		wg.Go(func() {
			resp, err := c.Client.Conn.Ask(ctx, q.Method, q.Params)
			if err == nil {
				err = f.answer(ctx, c, q.Method, resp, func(_ context.Context, judged json.RawMessage) error {
					r, err := upstream.DecodeAnswer(q.Params, judged)
					if err != nil {
						return err
					}
					mu.Lock()
					out[q.Key] = r
					mu.Unlock()
					return nil
				})
			}
			if err != nil {
				f.logger.Info("question to the client failed", "tool", c.Name, "method", q.Method, "error", text.Sanitize(err.Error()))
			}
		})
	}
	wg.Wait()
	return out
}

// answer sends a client's answer to an upstream's question through the
// chain; the chain's final handler hands it to deliver.
func (f *Forward) answer(ctx context.Context, c *call.Call, method string, resp mcp.InputResponse, deliver func(context.Context, json.RawMessage) error) error {
	raw, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	f.answersMu.RLock()
	h := f.answers
	f.answersMu.RUnlock()
	if h == nil {
		return deliver(ctx, raw)
	}
	a := &call.Call{Method: call.Answer, Name: method, Arguments: raw, Client: c.Client,
		Upstream: c.Upstream, Target: c.Target, Reply: deliver}
	_, err = h.Serve(ctx, a)
	return err
}

// modernMetaFor returns the _meta to send a 2026-07-28 upstream on behalf
// of a legacy client: the client's own, plus its session's capabilities
// and the most verbose log level (the client's session level filters what
// reaches it).
func modernMetaFor(c *call.Call, in mcp.Meta) mcp.Meta {
	m := make(mcp.Meta, len(in)+2)
	for k, v := range in {
		m[k] = v
	}
	if caps := capabilitiesMeta(c.Client.Capabilities); caps != nil {
		m[mcp.MetaKeyClientCapabilities] = caps
	}
	if _, ok := m[mcp.MetaKeyLogLevel]; !ok {
		m[mcp.MetaKeyLogLevel] = "debug"
	}
	return m
}

// capabilitiesMeta encodes capabilities as they travel in _meta (roots
// only when declared).
func capabilitiesMeta(caps *mcp.ClientCapabilities) map[string]any {
	if caps == nil {
		return map[string]any{}
	}
	var m map[string]any
	b, err := json.Marshal(caps)
	if err != nil || json.Unmarshal(b, &m) != nil {
		return nil
	}
	if caps.RootsV2 == nil {
		delete(m, "roots")
	} else {
		m["roots"] = caps.RootsV2
	}
	return m
}

// undeclared returns the method of the first question the client's
// capabilities do not cover, "" if it can answer them all.
func undeclared(qs []*upstream.Question, caps *mcp.ClientCapabilities) string {
	for _, q := range qs {
		switch p := q.Params.(type) {
		case *mcp.ElicitParams:
			if caps == nil || caps.Elicitation == nil || (p.Mode == "url" && caps.Elicitation.URL == nil) {
				return q.Method
			}
		case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
			if caps == nil || caps.Sampling == nil {
				return q.Method
			}
		case *mcp.ListRootsParams:
			if caps == nil || caps.RootsV2 == nil {
				return q.Method
			}
		}
	}
	return ""
}

// escapeKey and unescapeKey map an upstream's inputRequests keys to the
// client's and back.
func escapeKey(k string) string {
	if gatewayKey(k) || strings.HasPrefix(k, escapePrefix) {
		return escapePrefix + k
	}
	return k
}

// gatewayKey reports a key of the gateway's own questions, which no
// upstream's key may pass for.
func gatewayKey(k string) bool {
	return strings.HasPrefix(k, GatewayKeyPrefix) || strings.HasPrefix(k, gatewayDotPrefix)
}

func unescapeAnswers(in mcp.InputResponseMap) mcp.InputResponseMap {
	if len(in) == 0 {
		return nil
	}
	out := make(mcp.InputResponseMap, len(in))
	for k, v := range in {
		switch {
		case strings.HasPrefix(k, escapePrefix):
			out[strings.TrimPrefix(k, escapePrefix)] = v
		case gatewayKey(k):
			// The gateway's own questions: answered by its stages.
		default:
			out[k] = v
		}
	}
	return out
}

// inputRequired builds an input_required result of an upstream's
// questions, their keys escaped.
func inputRequired(qs []*upstream.Question, token string) json.RawMessage {
	m := make(map[string]json.RawMessage, len(qs))
	for _, q := range qs {
		m[escapeKey(q.Key)] = q.Raw
	}
	return call.InputRequired(m, token)
}

// result adapts an upstream's final result to the client's era: a
// 2026-07-28 client's resources/read carries cache-control (none for a
// retry, which must not be cached).
func (f *Forward) result(c *call.Call, r *upstream.Result) json.RawMessage {
	body := r.Raw
	var err error
	if c.Client.Modern() && c.Method == call.ResourcesRead {
		retry := c.RequestState != "" || len(c.InputResponses) > 0
		if _, ok, _ := rawjson.Get(body, "ttlMs"); !ok || retry {
			body, err = rawjson.Set(body, "ttlMs", json.RawMessage("0"))
		}
		if _, ok, _ := rawjson.Get(body, "cacheScope"); err == nil && (!ok || retry) {
			body, err = rawjson.Set(body, "cacheScope", json.RawMessage(`"private"`))
		}
	}
	if err == nil && !rawjson.IsObject(body) {
		err = errors.New("not a JSON object")
	}
	if err != nil {
		// The upstream's result is not an object the gateway can edit:
		// send the SDK's decoding.
		f.logger.Warn("upstream result could not be passed through; re-encoded", "tool", c.Name, "error", err)
		b, _ := json.Marshal(r.Typed)
		body = b
	}
	return body
}

// outcomeOf names how a final result ended, for the log.
func outcomeOf(r *upstream.Result) string {
	if t, ok := r.Typed.(*mcp.CallToolResult); ok && t.IsError {
		return "tool_error"
	}
	return "ok"
}

// upstreamError turns an upstream's failure into the client's error: the
// upstream's own JSON-RPC error as it sent it, or -32603 naming the
// upstream.
//
// A transient failure ([upstream.TransientError]: the upstream down, the
// connection or process lost, no answer in time, HTTP 5xx) is returned as
// it is, for the retry to decide on.
func upstreamError(up *upstream.Conn, err error) error {
	if upstream.Transient(err) {
		return err
	}
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return &jsonrpc.Error{Code: we.Code, Message: we.Message, Data: we.Data}
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return internalError("upstream %q did not answer in time", up.Name())
	}
	return internalError("upstream %q: %s", up.Name(), text.Sanitize(text.Clip(err.Error(), quoteLimit)))
}

func internalError(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(format, args...)}
}

// quoteLimit bounds, in bytes, an upstream's text quoted in an error or a
// log ([text.Clip]).
const quoteLimit = 300
