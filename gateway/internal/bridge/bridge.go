// Package bridge forwards a call to its upstream and carries questions
// across protocol eras: the final handler of the gateway's call path.
//
// Both sides can be of either era, and so can their questions:
//
//   - a 2026-07-28 upstream answers input_required; a 2026-07-28 client gets
//     it as input_required, with the upstream's requestState sealed inside
//     the gateway's own (package requeststate: AES-GCM, bound to the method,
//     the tool as the client named it, the arguments, the gateway and the
//     principal), so the client can neither read nor alter it; a legacy
//     client is asked with real requests within its call, and the gateway
//     retries the upstream with the answers, round after round;
//   - a legacy upstream asks with requests in the middle of its call; a
//     legacy client gets the same requests; a 2026-07-28 client gets
//     input_required, while the upstream's call waits, parked in a
//     [Parking] under an id sealed in the requestState, for the retry that
//     carries the answers.
//
// inputRequests keys are namespaced: keys that start with "preflight/"
// belong to the gateway itself, so an upstream's keys that would collide are
// escaped under "upstream/" on the way to the client and unescaped on the
// way back; other keys pass unchanged. Results pass through as the upstream
// sent them, adjusted only as the client's era requires (resultType,
// cache-control).
package bridge

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

	"github.com/preflightmcp/preflight/gateway/internal/pipeline"
	"github.com/preflightmcp/preflight/gateway/internal/rawjson"
	"github.com/preflightmcp/preflight/gateway/internal/state"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
	"github.com/preflightmcp/preflight/requeststate"
)

// Key namespaces of inputRequests.
const (
	// GatewayKeyPrefix starts the keys of the gateway's own questions.
	GatewayKeyPrefix = "preflight/"
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
	// Parking holds legacy upstreams' calls while a 2026-07-28 client is
	// asked. Nil means a new [MemoryParking] with its defaults.
	Parking Parking
	// MaxRounds bounds the questions of one call (rounds of a 2026-07-28
	// upstream asked on a legacy client's behalf, or requests of a legacy
	// upstream). Zero means DefaultMaxRounds.
	MaxRounds int
	// Logger receives refused state and failed questions. Nil discards.
	Logger *slog.Logger
	// Nonces make each round of a confirmed call's questions answerable
	// once: the state sealed for such a round records the confirmation
	// and a nonce, which [Forward.Resumed] returns for the ask stage to
	// use. Nil means an in-process store.
	Nonces state.Nonces
}

// Forward is the final handler of the call path.
type Forward struct {
	ring      *requeststate.Ring
	audience  string
	parking   Parking
	maxRounds int
	logger    *slog.Logger
	nonces    state.Nonces
	own       *state.Store // made when Options.Nonces is nil
	sessions  sessions     // legacy clients' passed-through calls
}

// New returns the forwarding handler.
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
	f.sessions.init()
	return f
}

// Close ends the calls still parked.
func (f *Forward) Close() {
	f.parking.Close()
	if f.own != nil {
		f.own.Close()
	}
}

// Serve implements pipeline.Handler.
func (f *Forward) Serve(ctx context.Context, c *pipeline.Call) (mcp.Result, error) {
	c.UpstreamEra = c.Upstream.Era()
	if c.Wire != nil {
		if !c.Client.Modern {
			return f.sessionPassthrough(ctx, c)
		}
		return f.passthrough(ctx, c)
	}
	if c.Client.Modern {
		return f.modern(ctx, c)
	}
	return f.legacy(ctx, c)
}

// statePayload is what the gateway seals into the requestState it gives a
// 2026-07-28 client.
type statePayload struct {
	Upstream string `json:"u"`
	State    string `json:"s,omitempty"` // the upstream's own requestState
	Parked   string `json:"p,omitempty"` // id of a parked legacy call
	// Confirmed records that the call was confirmed before it was
	// forwarded, and Nonce makes this round answerable once.
	Confirmed *pipeline.Confirmation `json:"c,omitempty"`
	Nonce     string                 `json:"n,omitempty"`
}

func (f *Forward) binding(c *pipeline.Call) (requeststate.Binding, error) {
	b := requeststate.Binding{Method: c.Method, Target: c.Name, Audience: f.audience, Principal: c.Client.Principal}
	if c.Method != upstream.MethodReadResource {
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

// open opens the requestState of a 2026-07-28 client's retry.
func (f *Forward) open(c *pipeline.Call) (*statePayload, error) {
	b, err := f.binding(c)
	if err != nil {
		return nil, requeststate.WireError(&requeststate.Error{Reason: requeststate.ReasonArguments, Detail: err.Error()})
	}
	raw, err := f.ring.Open(c.RequestState, b)
	if err != nil {
		f.logger.Warn("requestState refused", "reason", requeststate.ReasonOf(err), "tool", c.Name, "error", err)
		return nil, requeststate.WireError(err)
	}
	var p statePayload
	if err := json.Unmarshal(raw, &p); err != nil || p.Upstream != c.Upstream.Name() {
		f.logger.Warn("requestState refused", "reason", "payload", "tool", c.Name)
		return nil, requeststate.WireError(&requeststate.Error{Reason: requeststate.ReasonMalformed, Detail: "payload"})
	}
	return &p, nil
}

func (f *Forward) seal(ctx context.Context, c *pipeline.Call, p statePayload) (string, error) {
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

// Resumed implements pipeline.Resumer: it opens the requestState of a
// 2026-07-28 client's retry as the forward stage's own, for this call, and
// returns the confirmation it recorded and its nonce (nil and "" for a
// call sealed unconfirmed).
func (f *Forward) Resumed(c *pipeline.Call) (*pipeline.Confirmation, string, error) {
	if c.Upstream == nil {
		return nil, "", &requeststate.Error{Reason: requeststate.ReasonMalformed, Detail: "no upstream"}
	}
	p, err := f.open(c)
	if err != nil {
		return nil, "", err
	}
	return p.Confirmed, p.Nonce, nil
}

// modern serves a 2026-07-28 client.
func (f *Forward) modern(ctx context.Context, c *pipeline.Call) (mcp.Result, error) {
	var st *statePayload
	if c.RequestState != "" {
		var err error
		if st, err = f.open(c); err != nil {
			return nil, err
		}
	}
	answers := unescapeAnswers(c.InputResponses)
	rl := newRelay(ctx, c.Client.Session)

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
		parked.Relay.set(ctx, c.Client.Session)
		rl = parked.Relay
		if err := ex.Answer(answers); err != nil {
			ex.Close()
			return nil, internalError("%v", err)
		}
	} else {
		req := upstream.Request{Method: c.Method, Name: c.Target, Arguments: c.Arguments, Meta: c.Meta, Peer: rl, Detached: true}
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
		var err error
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
		p := &Parked{Exchange: ex, Relay: rl, Upstream: c.Upstream.Name()}
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

// legacy serves a 2025-11-25 (or older) client: questions become real
// requests within the call.
func (f *Forward) legacy(ctx context.Context, c *pipeline.Call) (mcp.Result, error) {
	meta := c.Meta
	if c.Upstream.Era() >= upstream.EraModern {
		meta = modernMetaFor(c)
	}
	ex, err := c.Upstream.Start(ctx, upstream.Request{Method: c.Method, Name: c.Target, Arguments: c.Arguments, Meta: meta, Peer: newRelay(ctx, c.Client.Session)})
	if err != nil {
		return nil, upstreamError(c.Upstream, err)
	}
	defer ex.Close()
	shed := 0
	for round := 0; ; round++ {
		step, err := ex.Next(ctx)
		if err != nil {
			return nil, upstreamError(c.Upstream, err)
		}
		if step.Result != nil {
			c.Outcome = outcomeOf(step.Result)
			return f.result(c, step.Result), nil
		}
		if round >= f.maxRounds {
			return nil, internalError("%s %q: the upstream asked more than %d rounds of questions", c.Method, clip(c.Name), f.maxRounds)
		}
		if len(step.Questions) == 0 {
			// Load shedding: retry after a pause.
			shed++
			if err := sleep(ctx, min(50*time.Millisecond<<min(shed, 5), maxBackoff)); err != nil {
				return nil, err
			}
			ex.Answer(nil)
			continue
		}
		answers := f.ask(ctx, c, step.Questions)
		if err := ex.Answer(answers); err != nil {
			return nil, internalError("%v", err)
		}
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

// ask puts a round's questions to a legacy client, concurrently, and
// returns the answers it gave; a question that fails is left unanswered
// (and logged): the upstream asks again or gives up.
func (f *Forward) ask(ctx context.Context, c *pipeline.Call, qs []*upstream.Question) mcp.InputResponseMap {
	ss := c.Client.Session
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		out = mcp.InputResponseMap{}
	)
	for _, q := range qs {
		wg.Go(func() {
			var (
				resp mcp.InputResponse
				err  error
			)
			switch p := q.Params.(type) {
			case *mcp.ElicitParams:
				resp, err = ss.Elicit(ctx, p)
			case *mcp.CreateMessageWithToolsParams:
				resp, err = ss.CreateMessageWithTools(ctx, p)
			case *mcp.CreateMessageParams:
				resp, err = ss.CreateMessage(ctx, p)
			case *mcp.ListRootsParams:
				resp, err = ss.ListRoots(ctx, p)
			default:
				err = fmt.Errorf("unknown question %T", q.Params)
			}
			if err != nil {
				f.logger.Info("question to the client failed", "tool", c.Name, "method", q.Method, "error", upstream.Sanitize(err.Error()))
				return
			}
			mu.Lock()
			out[q.Key] = resp
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// modernMetaFor returns the _meta to send a 2026-07-28 upstream on behalf
// of a legacy client: the client's own, plus its session's capabilities
// and the most verbose log level (the client's session level filters what
// reaches it).
func modernMetaFor(c *pipeline.Call) mcp.Meta {
	m := make(mcp.Meta, len(c.Meta)+2)
	for k, v := range c.Meta {
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
	if strings.HasPrefix(k, GatewayKeyPrefix) || strings.HasPrefix(k, escapePrefix) {
		return escapePrefix + k
	}
	return k
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
		case strings.HasPrefix(k, GatewayKeyPrefix):
			// The gateway's own questions: none are asked yet.
		default:
			out[k] = v
		}
	}
	return out
}

// inputRequired builds an input_required result for a 2026-07-28 client.
func inputRequired(qs []*upstream.Question, token string) *Raw {
	members := make([]rawjson.Member, 0, len(qs))
	for _, q := range qs {
		members = append(members, rawjson.Member{Key: escapeKey(q.Key), Value: q.Raw})
	}
	tok, _ := json.Marshal(token)
	body := rawjson.Object([]rawjson.Member{
		{Key: "resultType", Value: json.RawMessage(`"input_required"`)},
		{Key: "inputRequests", Value: rawjson.Object(members)},
		{Key: "requestState", Value: tok},
	})
	return &Raw{body: body}
}

// result adapts an upstream's final result to the client's era.
func (f *Forward) result(c *pipeline.Call, r *upstream.Result) *Raw {
	body := r.Raw
	var err error
	if c.Client.Modern {
		if _, ok, _ := rawjson.Get(body, "resultType"); !ok {
			body, err = rawjson.Set(body, "resultType", json.RawMessage(`"complete"`))
		}
		if err == nil && c.Method == upstream.MethodReadResource {
			retry := c.RequestState != "" || len(c.InputResponses) > 0
			if _, ok, _ := rawjson.Get(body, "ttlMs"); !ok || retry {
				body, err = rawjson.Set(body, "ttlMs", json.RawMessage("0"))
			}
			if _, ok, _ := rawjson.Get(body, "cacheScope"); err == nil && (!ok || retry) {
				body, err = rawjson.Set(body, "cacheScope", json.RawMessage(`"private"`))
			}
		}
	} else {
		body, err = rawjson.Delete(body, "resultType")
	}
	if err != nil {
		// The upstream's result is not an object the gateway can edit:
		// send the SDK's decoding.
		f.logger.Warn("upstream result could not be passed through; re-encoded", "tool", c.Name, "error", err)
		b, _ := json.Marshal(r.Typed)
		body = b
	}
	return &Raw{body: body}
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
// it is, for the retry stage to decide on.
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
	return internalError("upstream %q: %s", up.Name(), upstream.Sanitize(clip(err.Error())))
}

func internalError(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(format, args...)}
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}
