package upstream

//lint:file-ignore SA1019 the gateway passes sampling, roots and logging through faithfully; protocol 2026-07-28 deprecates them (SEP-2577) but clients and servers still use them during the deprecation window.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/rawjson"
)

// Methods that may ask the client questions.
const (
	MethodCallTool     = "tools/call"
	MethodGetPrompt    = "prompts/get"
	MethodReadResource = "resources/read"
)

// Methods of questions.
const (
	MethodElicit        = "elicitation/create"
	MethodCreateMessage = "sampling/createMessage"
	MethodListRoots     = "roots/list"
)

// Request is one call that may ask the client questions.
type Request struct {
	// Method is MethodCallTool, MethodGetPrompt or MethodReadResource.
	Method string
	// Name is the upstream's name of the tool or prompt, or the resource's
	// URI.
	Name string
	// Arguments are the call's arguments as the client sent them (a JSON
	// object; prompts/get: of strings). Nil means none.
	Arguments json.RawMessage
	// Meta is the _meta to send. Keys of the 2026-07-28 per-request
	// protocol (protocolVersion, clientInfo, clientCapabilities, logLevel)
	// are removed for a legacy upstream; a progress token is replaced by
	// one of the gateway's own and mapped back on the way down.
	Meta mcp.Meta
	// Peer receives the call's progress and log notifications. Nil drops
	// them.
	Peer Peer
	// Detached lets the call outlive the context of Next, within
	// CallTimeout: a legacy upstream's call that asked a question keeps
	// running while the client is asked in a later request. Close ends it.
	Detached bool
	// Resume continues a 2026-07-28 upstream's call: its requestState and
	// the answers to its questions.
	Resume *Resume
}

// Resume is where a call to a 2026-07-28 upstream stands between rounds.
type Resume struct {
	State   string
	Answers mcp.InputResponseMap
}

// Peer is the client side of one call.
type Peer interface {
	Progress(ctx context.Context, p *mcp.ProgressNotificationParams)
	Log(ctx context.Context, p *mcp.LoggingMessageParams)
}

// Step is what an exchange yields: the final result, or questions.
type Step struct {
	// Result is the final result; nil when there are questions.
	Result *Result
	// Questions are what the upstream asks, all to be answered with one
	// [Exchange.Answer]. An input_required result with no questions (a
	// 2026-07-28 upstream shedding load) has none and a State.
	Questions []*Question
	// State is a 2026-07-28 upstream's requestState for the next round.
	State string
}

// Result is a final result as the upstream sent it.
type Result struct {
	Raw json.RawMessage
	// Typed is the SDK's decoding: *mcp.CallToolResult,
	// *mcp.GetPromptResult or *mcp.ReadResourceResult.
	Typed mcp.Result
	// TTLMs and Scope are a resources/read result's cache-control as the
	// upstream sent it; Scope is "" when it sent none.
	TTLMs int
	Scope string
}

// Question is one thing the upstream asks the client.
type Question struct {
	// Key identifies the question: the upstream's inputRequests key, or,
	// for a request sent in the middle of a legacy call, one made up by
	// the exchange.
	Key string
	// Method is MethodElicit, MethodCreateMessage or MethodListRoots.
	Method string
	// Params are the question's parameters (*mcp.ElicitParams,
	// *mcp.CreateMessageWithToolsParams or *mcp.CreateMessageParams,
	// *mcp.ListRootsParams).
	Params mcp.InputRequest
	// Raw is the question as the upstream sent it: {"method", "params"}.
	Raw json.RawMessage
}

// Exchange is one call in progress. Call Next until it yields a result,
// answering each step's questions with Answer; always Close it.
type Exchange interface {
	// Next sends the call (or its next round) and returns its next step.
	Next(ctx context.Context) (*Step, error)
	// Answer gives the answers to the last step's questions, by key; a
	// question without an answer is refused to the upstream.
	Answer(answers mcp.InputResponseMap) error
	// Close ends the call, if it still runs, and releases it.
	Close()
	// Stateless reports whether the call needs nothing of this exchange
	// between rounds (a 2026-07-28 upstream: its state travels in the
	// Step), so that a later request can continue it with Request.Resume.
	Stateless() bool
}

// Start begins a call on the upstream. It fails at once if the upstream is
// down or has too many calls in flight. A legacy upstream's call is sent at
// once, within ctx unless req.Detached; a 2026-07-28 upstream's at the
// first Next.
func (c *Conn) Start(ctx context.Context, req Request) (Exchange, error) {
	cs, era, err := c.sessionFor(ctx)
	if err != nil {
		return nil, c.downError(err)
	}
	select {
	case c.inflight <- struct{}{}:
	default:
		return nil, fmt.Errorf("upstream %q has %d calls in flight, its limit", c.spec.Name, cap(c.inflight))
	}
	req.Meta = prepareMeta(req.Meta, era >= EraModern)
	base := &call{conn: c, cs: cs, req: req}
	if era >= EraModern {
		m := &modernExchange{call: base}
		if req.Resume != nil {
			m.state, m.answers = req.Resume.State, req.Resume.Answers
		}
		return m, nil
	}
	if req.Resume != nil {
		<-c.inflight
		return nil, errors.New("a legacy upstream's call cannot be resumed from a requestState")
	}
	l := &legacyExchange{call: base, questions: make(chan *pending), result: make(chan outcome, 1), stop: make(chan struct{})}
	l.start(ctx)
	return l, nil
}

// prepareMeta copies meta for the upstream's era.
func prepareMeta(meta mcp.Meta, modern bool) mcp.Meta {
	if len(meta) == 0 {
		return nil
	}
	out := maps.Clone(meta)
	if !modern {
		for _, k := range []string{mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities, mcp.MetaKeyLogLevel} {
			delete(out, k)
		}
	}
	return out
}

// call is what both kinds of exchange share.
type call struct {
	conn   *Conn
	cs     *mcp.ClientSession
	req    Request
	closed atomic.Bool
}

func (b *call) release() {
	if b.closed.CompareAndSwap(false, true) {
		<-b.conn.inflight
	}
}

// send sends one round of the call and returns the raw and typed results.
func (b *call) send(ctx context.Context, answers mcp.InputResponseMap, state string) (*Result, error) {
	meta := b.req.Meta
	if tok, ok := meta["progressToken"]; ok && b.req.Peer != nil {
		own, forget := b.conn.calls.progress(tok, b.req.Peer)
		defer forget()
		meta = maps.Clone(meta)
		meta["progressToken"] = own
	}
	ctx, s := withSink(ctx)
	defer s.done()
	var (
		typed mcp.Result
		err   error
	)
	switch b.req.Method {
	case MethodCallTool:
		args := b.req.Arguments
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		typed, err = b.cs.CallTool(ctx, &mcp.CallToolParams{Meta: meta, Name: b.req.Name, Arguments: args, InputResponses: answers, RequestState: state})
	case MethodGetPrompt:
		var args map[string]string
		if len(b.req.Arguments) > 0 && string(b.req.Arguments) != "null" {
			if err := json.Unmarshal(b.req.Arguments, &args); err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "prompts/get: arguments must be an object of strings"}
			}
		}
		typed, err = b.cs.GetPrompt(ctx, &mcp.GetPromptParams{Meta: meta, Name: b.req.Name, Arguments: args, InputResponses: answers, RequestState: state})
	case MethodReadResource:
		typed, err = b.cs.ReadResource(ctx, &mcp.ReadResourceParams{Meta: meta, URI: b.req.Name, InputResponses: answers, RequestState: state})
	default:
		return nil, fmt.Errorf("upstream: cannot send %q as an exchange", b.req.Method)
	}
	if err != nil {
		return nil, b.conn.classify(ctx, b.cs, s, err)
	}
	s.settle(ctx, b.conn.flow.Load())
	raw := s.result()
	if raw == nil {
		// Nothing captured (the transport did not let us see it): encode
		// the SDK's decoding instead.
		if raw, err = json.Marshal(typed); err != nil {
			return nil, err
		}
	}
	r := &Result{Raw: raw, Typed: typed}
	s.mu.Lock()
	if s.cache.seen {
		r.TTLMs, r.Scope = s.cache.ttlMs, s.cache.scope
	}
	s.mu.Unlock()
	return r, nil
}

// modernExchange is a call to a 2026-07-28 upstream: each round is one
// request; questions come as input_required.
type modernExchange struct {
	*call
	state   string
	answers mcp.InputResponseMap
}

func (m *modernExchange) Stateless() bool { return true }

func (m *modernExchange) Next(ctx context.Context) (*Step, error) {
	ctx, cancel := context.WithTimeout(ctx, m.conn.spec.CallTimeout)
	defer cancel()
	done := m.conn.calls.enter(m.req.Peer, nil, m.cs)
	defer done()
	res, err := m.send(ctx, m.answers, m.state)
	m.answers = nil
	if err != nil {
		return nil, err
	}
	step, needs := InputStep(res)
	if !needs {
		return &Step{Result: res}, nil
	}
	m.state = step.State
	return step, nil
}

// InputStep reports whether a 2026-07-28 upstream's result is
// input_required, and returns the step it makes: its questions, in the
// order of their keys, and its requestState.
func InputStep(res *Result) (*Step, bool) {
	needs, state, asks := inputOf(res.Typed)
	if !needs {
		return nil, false
	}
	step := &Step{State: state}
	rawAsks, _, _ := rawjson.Get(res.Raw, "inputRequests")
	rawByKey := map[string]json.RawMessage{}
	if ms, err := rawjson.Members(rawAsks); err == nil {
		for _, mb := range ms {
			rawByKey[mb.Key] = mb.Value
		}
	}
	for key, ir := range asks {
		q := &Question{Key: key, Params: ir, Raw: rawByKey[key], Method: methodOf(ir)}
		if q.Raw == nil {
			q.Raw = encodeQuestion(q.Method, ir)
		}
		step.Questions = append(step.Questions, q)
	}
	sortQuestions(step.Questions)
	return step, true
}

func (m *modernExchange) Answer(answers mcp.InputResponseMap) error {
	m.answers = answers
	return nil
}

func (m *modernExchange) Close() { m.release() }

// inputOf returns whether a result is input_required, its state and its
// questions.
func inputOf(r mcp.Result) (needs bool, state string, asks mcp.InputRequestMap) {
	switch r := r.(type) {
	case *mcp.CallToolResult:
		return r.NeedsInput(), r.RequestState, r.InputRequests
	case *mcp.GetPromptResult:
		return r.NeedsInput(), r.RequestState, r.InputRequests
	case *mcp.ReadResourceResult:
		return r.NeedsInput(), r.RequestState, r.InputRequests
	}
	return false, "", nil
}

func methodOf(ir mcp.InputRequest) string {
	switch ir.(type) {
	case *mcp.ElicitParams:
		return MethodElicit
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
		return MethodCreateMessage
	case *mcp.ListRootsParams:
		return MethodListRoots
	}
	return ""
}

// DecodeQuestion decodes the params of a question of method into the SDK's
// type of them.
func DecodeQuestion(method string, params json.RawMessage) (mcp.InputRequest, error) {
	var q mcp.InputRequest
	switch method {
	case MethodElicit:
		q = &mcp.ElicitParams{}
	case MethodCreateMessage:
		if _, ok, _ := rawjson.Get(params, "tools"); ok {
			q = &mcp.CreateMessageWithToolsParams{}
		} else {
			q = &mcp.CreateMessageParams{}
		}
	case MethodListRoots:
		q = &mcp.ListRootsParams{}
		if len(params) == 0 {
			return q, nil
		}
	default:
		return nil, fmt.Errorf("unknown question %q", method)
	}
	if err := json.Unmarshal(params, q); err != nil {
		return nil, err
	}
	return q, nil
}

// DecodeAnswer decodes a client's answer to the question q into the SDK's
// type of it.
func DecodeAnswer(q mcp.InputRequest, raw json.RawMessage) (mcp.InputResponse, error) {
	var r mcp.InputResponse
	switch q.(type) {
	case *mcp.ElicitParams:
		r = &mcp.ElicitResult{}
	case *mcp.CreateMessageWithToolsParams:
		r = &mcp.CreateMessageWithToolsResult{}
	case *mcp.CreateMessageParams:
		r = &mcp.CreateMessageResult{}
	case *mcp.ListRootsParams:
		r = &mcp.ListRootsResult{}
	default:
		return nil, fmt.Errorf("unknown question %T", q)
	}
	if err := json.Unmarshal(raw, r); err != nil {
		return nil, fmt.Errorf("the answer is malformed: %w", err)
	}
	return r, nil
}

func encodeQuestion(method string, params any) json.RawMessage {
	b, _ := json.Marshal(struct {
		Method string `json:"method"`
		Params any    `json:"params,omitempty"`
	}{method, params})
	return b
}

func sortQuestions(qs []*Question) {
	for i := 1; i < len(qs); i++ {
		for j := i; j > 0 && qs[j].Key < qs[j-1].Key; j-- {
			qs[j], qs[j-1] = qs[j-1], qs[j]
		}
	}
}

// legacyExchange is a call to a 2025-11-25 (or older) upstream: the call
// runs in its own goroutine, and a request the upstream sends in the middle
// of it is routed to the exchange (see Conn.questionRouter) and surfaces as
// a step's question.
type legacyExchange struct {
	*call
	cancel    context.CancelFunc
	questions chan *pending // from the router
	result    chan outcome  // the call's end
	stop      chan struct{} // closed by Close
	stopOnce  sync.Once
	callDone  <-chan struct{} // done with the call's own context
	asked     *pending        // the question of the last step
	seq       int
}

// pending is a question waiting for its answer.
type pending struct {
	q     *Question
	reply chan answer
}

type answer struct {
	resp mcp.InputResponse
	err  error
}

type outcome struct {
	res *Result
	err error
}

func (l *legacyExchange) Stateless() bool { return false }

func (l *legacyExchange) start(ctx context.Context) {
	var cctx context.Context
	if l.req.Detached {
		cctx, l.cancel = context.WithTimeout(context.WithoutCancel(ctx), l.conn.spec.CallTimeout)
	} else {
		cctx, l.cancel = context.WithTimeout(ctx, l.conn.spec.CallTimeout)
	}
	l.callDone = cctx.Done()
	done := l.conn.calls.enter(l.req.Peer, l, l.cs)
	go func() {
		res, err := l.send(cctx, nil, "")
		// The call leaves the table before its result is handed over:
		// once the caller has it, the next call on this upstream may ask
		// questions, which are routed only while one call is in flight.
		done()
		l.result <- outcome{res, err}
		if h := l.conn.testHookResultSent; h != nil {
			h()
		}
	}()
}

func (l *legacyExchange) Next(ctx context.Context) (*Step, error) {
	select {
	case o := <-l.result:
		l.result <- o // later calls of Next see it again
		if o.err != nil {
			return nil, o.err
		}
		return &Step{Result: o.res}, nil
	case p := <-l.questions:
		l.asked = p
		return &Step{Questions: []*Question{p.q}}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *legacyExchange) Answer(answers mcp.InputResponseMap) error {
	p := l.asked
	if p == nil {
		return errors.New("upstream: no question to answer")
	}
	l.asked = nil
	a := answer{resp: answers[p.q.Key]}
	if a.resp == nil {
		a.err = fmt.Errorf("the client did not answer %s", p.q.Method)
	}
	p.reply <- a // buffered
	return nil
}

// Refuse answers the last step's question with an error.
func (l *legacyExchange) Refuse(err error) {
	if p := l.asked; p != nil {
		l.asked = nil
		p.reply <- answer{err: err}
	}
}

func (l *legacyExchange) Close() {
	l.stopOnce.Do(func() { close(l.stop) })
	if l.cancel != nil {
		l.cancel()
	}
	if p := l.asked; p != nil {
		l.asked = nil
		p.reply <- answer{err: errors.New("the call was abandoned")}
	}
	l.release()
}

// ask is called by the router, on the connection's goroutine for the
// upstream's request, to put a question to the exchange's client.
func (l *legacyExchange) ask(ctx context.Context, method string, params mcp.InputRequest) (mcp.Result, error) {
	l.conn.calls.mu.Lock()
	l.seq++
	key := method + "#" + strconv.Itoa(l.seq)
	l.conn.calls.mu.Unlock()
	p := &pending{q: &Question{Key: key, Method: method, Params: params, Raw: encodeQuestion(method, params)}, reply: make(chan answer, 1)}
	abandoned := &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the call was abandoned"}
	select {
	case l.questions <- p:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-l.stop:
		return nil, abandoned
	case <-l.callDone:
		return nil, abandoned
	}
	select {
	case <-l.stop:
		return nil, abandoned
	case <-l.callDone:
		return nil, abandoned
	case a := <-p.reply:
		if a.err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: a.err.Error()}
		}
		r, ok := a.resp.(mcp.Result)
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("unexpected answer %T", a.resp)}
		}
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
