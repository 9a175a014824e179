package rounds

//lint:file-ignore SA1019 rounds answers sampling and roots questions for servers that still ask them (deprecated by protocol 2026-07-28, SEP-2577).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Method names, as on the wire.
const (
	methodCallTool      = "tools/call"
	methodGetPrompt     = "prompts/get"
	methodReadResource  = "resources/read"
	methodElicit        = "elicitation/create"
	methodCreateMessage = "sampling/createMessage"
	methodListRoots     = "roots/list"
)

// DefaultMaxRounds is the bound on requests per call when
// [Options.MaxRounds] is zero, the same as the SDK's built-in loop.
const DefaultMaxRounds = 10

// Options configures the rounds of a client made by [NewClient]. A nil
// *Options means the zero value.
type Options struct {
	// MaxRounds bounds the requests sent for one call, the first included:
	// a call still answered input_required after MaxRounds requests fails
	// with a [*RoundsError]. Zero means [DefaultMaxRounds]; a negative value
	// panics in NewClient.
	MaxRounds int

	// Backoff returns how long to wait before retrying after the n-th state-only
	// round in a row (n >= 1): a round whose result carries no questions,
	// only requestState (the server asking to retry later). A round with
	// questions resets n. Zero or less means retry at once.
	// If nil, [DefaultBackoff] is used.
	Backoff func(n int) time.Duration

	// Sleep waits for d or until ctx is done, whichever comes first, and
	// returns a non-nil error (ctx's) in the second case; the call then fails
	// with that error. If nil, a timer is used. Tests inject a Sleep that
	// records durations and returns at once.
	Sleep func(ctx context.Context, d time.Duration) error

	// Roots are added to the client with [mcp.Client.AddRoots], so that
	// legacy roots/list requests and roots/list questions in rounds get the
	// same answer. Roots added or removed on the client later count too.
	//
	// Deprecated: roots are deprecated as of protocol version 2026-07-28
	// (SEP-2577); servers should take directories or files as tool
	// arguments, resource URIs or configuration. Questions a server still
	// asks are answered from the client's roots ([mcp.Client.AddRoots])
	// whether or not this field is set.
	Roots []*mcp.Root
}

// DefaultBackoff waits 50ms after the first state-only round in a row and
// doubles each time, up to 1s.
func DefaultBackoff(n int) time.Duration {
	const first, most = 50 * time.Millisecond, time.Second
	if n < 1 {
		return 0
	}
	if n > 6 { // 50ms << 5 = 1.6s: already past the cap
		return most
	}
	return min(first<<(n-1), most)
}

// NewClient returns a client that drives input_required rounds itself (see
// the package documentation). opts configures the client as for
// [mcp.NewClient]; it is copied, not modified, and its MultiRoundTrip field
// is replaced so as to turn the SDK's own loop off. ropts may be nil.
//
// The handlers in opts answer both the legacy server-to-client requests and
// the questions of rounds.
func NewClient(impl *mcp.Implementation, opts *mcp.ClientOptions, ropts *Options) *mcp.Client {
	var o mcp.ClientOptions
	if opts != nil {
		o = *opts
	}
	o.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}

	var ro Options
	if ropts != nil {
		ro = *ropts
	}
	if ro.MaxRounds < 0 {
		panic(fmt.Sprintf("rounds.NewClient: negative MaxRounds %d", ro.MaxRounds))
	}
	d := &driver{
		maxRounds: ro.MaxRounds,
		backoff:   ro.Backoff,
		sleep:     ro.Sleep,
		elicit:    o.ElicitationHandler != nil,
		sample:    o.CreateMessageHandler != nil || o.CreateMessageWithToolsHandler != nil,
	}
	if d.maxRounds == 0 {
		d.maxRounds = DefaultMaxRounds
	}
	if d.backoff == nil {
		d.backoff = DefaultBackoff
	}
	if d.sleep == nil {
		d.sleep = sleep
	}

	c := mcp.NewClient(impl, &o)
	// Capture the SDK's receiving handler before anyone wraps it: it is what
	// answers legacy elicitation/create, sampling/createMessage and
	// roots/list requests, with the SDK's checks, from the client's handlers
	// and roots.
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		d.recv = next
		return next
	})
	c.AddSendingMiddleware(d.middleware)
	if len(ro.Roots) > 0 {
		c.AddRoots(ro.Roots...)
	}
	return c
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

type keyContextKey struct{}

// InputKey reports the key of the input request a handler is answering,
// when it is called for a question of an input_required round; ok is false
// for a legacy server-to-client request.
func InputKey(ctx context.Context) (key string, ok bool) {
	key, ok = ctx.Value(keyContextKey{}).(string)
	return key, ok
}

// driver runs the rounds of one client.
type driver struct {
	maxRounds int
	backoff   func(int) time.Duration
	sleep     func(context.Context, time.Duration) error
	recv      mcp.MethodHandler // the SDK's receiving handler
	elicit    bool              // the client has an elicitation handler
	sample    bool              // the client has a sampling handler
}

// call names the call being driven, for errors.
type call struct {
	method string // tools/call, prompts/get, resources/read
	name   string // tool or prompt name, resource URI
}

func (c call) String() string { return fmt.Sprintf("%s %q", c.method, c.name) }

func (d *driver) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case methodCallTool, methodGetPrompt, methodReadResource:
			return d.drive(ctx, method, req, next)
		}
		return next(ctx, method, req)
	}
}

func (d *driver) drive(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	c := call{method: method, name: nameOf(req.GetParams())}
	waits := 0 // state-only rounds in a row
	for round := 1; ; round++ {
		res, err := next(ctx, method, req)
		if err != nil {
			if isUnknownInputMethod(err) {
				return nil, fmt.Errorf("rounds: %v: round %d: %w: %w", c, round, ErrUnknownInputMethod, err)
			}
			if round == 1 {
				return res, err // exactly what a plain client would see
			}
			return nil, fmt.Errorf("rounds: %v: round %d: %w", c, round, err)
		}
		asks, state, more := inputOf(res)
		if !more {
			return res, nil
		}
		if round >= d.maxRounds {
			return nil, &RoundsError{Method: c.method, Name: c.name, Rounds: round, Pending: slices.Sorted(maps.Keys(asks))}
		}
		var answers mcp.InputResponseMap
		if len(asks) == 0 {
			waits++
			if w := d.backoff(waits); w > 0 {
				if err := d.sleep(ctx, w); err != nil {
					return nil, fmt.Errorf("rounds: %v: waiting %v to retry after round %d: %w", c, w, round, err)
				}
			}
		} else {
			waits = 0
			cs, ok := req.GetSession().(*mcp.ClientSession)
			if !ok {
				return nil, fmt.Errorf("rounds: %v: not a client session (%T)", c, req.GetSession())
			}
			if answers, err = d.answer(ctx, c, cs, asks); err != nil {
				return nil, err
			}
		}
		if req, err = retry(req, answers, state); err != nil {
			return nil, fmt.Errorf("rounds: %v: %w", c, err)
		}
	}
}

// inputOf returns the questions and the state of an input_required result;
// more is false for a complete result. A result that carries questions is
// not complete whatever its resultType says.
func inputOf(res mcp.Result) (asks mcp.InputRequestMap, state string, more bool) {
	switch r := res.(type) {
	case *mcp.CallToolResult:
		return r.InputRequests, r.RequestState, r.NeedsInput() || len(r.InputRequests) > 0
	case *mcp.GetPromptResult:
		return r.InputRequests, r.RequestState, r.NeedsInput() || len(r.InputRequests) > 0
	case *mcp.ReadResourceResult:
		return r.InputRequests, r.RequestState, r.NeedsInput() || len(r.InputRequests) > 0
	}
	return nil, "", false
}

func nameOf(p mcp.Params) string {
	switch p := p.(type) {
	case *mcp.CallToolParams:
		if p != nil {
			return p.Name
		}
	case *mcp.CallToolParamsRaw:
		if p != nil {
			return p.Name
		}
	case *mcp.GetPromptParams:
		if p != nil {
			return p.Name
		}
	case *mcp.ReadResourceParams:
		if p != nil {
			return p.URI
		}
	}
	return ""
}

// retry returns the request of the next round: a new request of the same
// params type whose params are a shallow copy of req's with the answers and
// the state. req's params are not modified.
func retry(req mcp.Request, answers mcp.InputResponseMap, state string) (mcp.Request, error) {
	cs, _ := req.GetSession().(*mcp.ClientSession)
	switch p := req.GetParams().(type) {
	case *mcp.CallToolParams:
		var cp mcp.CallToolParams
		if p != nil {
			cp = *p
		}
		cp.InputResponses, cp.RequestState = answers, state
		return &mcp.ClientRequest[*mcp.CallToolParams]{Session: cs, Params: &cp}, nil
	case *mcp.CallToolParamsRaw:
		var cp mcp.CallToolParamsRaw
		if p != nil {
			cp = *p
		}
		cp.InputResponses, cp.RequestState = answers, state
		return &mcp.ClientRequest[*mcp.CallToolParamsRaw]{Session: cs, Params: &cp}, nil
	case *mcp.GetPromptParams:
		var cp mcp.GetPromptParams
		if p != nil {
			cp = *p
		}
		cp.InputResponses, cp.RequestState = answers, state
		return &mcp.ClientRequest[*mcp.GetPromptParams]{Session: cs, Params: &cp}, nil
	case *mcp.ReadResourceParams:
		var cp mcp.ReadResourceParams
		if p != nil {
			cp = *p
		}
		cp.InputResponses, cp.RequestState = answers, state
		return &mcp.ClientRequest[*mcp.ReadResourceParams]{Session: cs, Params: &cp}, nil
	}
	return nil, fmt.Errorf("cannot retry a request with params of type %T", req.GetParams())
}

// question is one input request, ready to hand to the SDK's receiving
// handler.
type question struct {
	key    string
	method string
	req    mcp.Request
}

// answer answers every question of a round, concurrently, and returns the
// answers under the same keys.
func (d *driver) answer(ctx context.Context, c call, cs *mcp.ClientSession, asks mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	// Check every question before asking any, so that a question the
	// client cannot answer fails the call before a user sees the others.
	qs := make([]question, 0, len(asks))
	for _, key := range slices.Sorted(maps.Keys(asks)) {
		q, err := d.prepare(cs, key, asks[key])
		if err != nil {
			return nil, &InputError{Method: c.method, Name: c.name, Key: key, InputMethod: q.method, Err: err}
		}
		qs = append(qs, q)
	}
	out := make(mcp.InputResponseMap, len(qs))
	if len(qs) == 1 {
		q := qs[0]
		r, err := d.ask(ctx, q)
		if err != nil {
			return nil, &InputError{Method: c.method, Name: c.name, Key: q.key, InputMethod: q.method, Err: err}
		}
		out[q.key] = r
		return out, nil
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed *InputError // the first failure; it cancels the others
	)
	for _, q := range qs {
		wg.Go(func() {
			r, err := d.ask(ctx, q)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if failed == nil {
					failed = &InputError{Method: c.method, Name: c.name, Key: q.key, InputMethod: q.method, Err: err}
					cancel(failed)
				}
				return
			}
			out[q.key] = r
		})
	}
	wg.Wait()
	if failed != nil {
		return nil, failed
	}
	return out, nil
}

// prepare turns an input request into a request for the SDK's receiving
// handler, or fails if the client cannot answer it.
func (d *driver) prepare(cs *mcp.ClientSession, key string, ir mcp.InputRequest) (question, error) {
	q := question{key: key}
	switch p := ir.(type) {
	case *mcp.ElicitParams:
		q.method = methodElicit
		if !d.elicit {
			return q, fmt.Errorf("%w (set mcp.ClientOptions.ElicitationHandler)", ErrNoHandler)
		}
		q.req = &mcp.ElicitRequest{Session: cs, Params: p}
	case *mcp.CreateMessageWithToolsParams:
		q.method = methodCreateMessage
		if !d.sample {
			return q, fmt.Errorf("%w (set mcp.ClientOptions.CreateMessageHandler or CreateMessageWithToolsHandler)", ErrNoHandler)
		}
		q.req = &mcp.CreateMessageWithToolsRequest{Session: cs, Params: p}
	case *mcp.CreateMessageParams:
		// Only built in process; the SDK decodes every wire question as
		// CreateMessageWithToolsParams.
		q.method = methodCreateMessage
		if !d.sample {
			return q, fmt.Errorf("%w (set mcp.ClientOptions.CreateMessageHandler or CreateMessageWithToolsHandler)", ErrNoHandler)
		}
		q.req = &mcp.CreateMessageWithToolsRequest{Session: cs, Params: withTools(p)}
	case *mcp.ListRootsParams:
		q.method = methodListRoots
		if p == nil {
			p = &mcp.ListRootsParams{}
		}
		q.req = &mcp.ListRootsRequest{Session: cs, Params: p}
	case nil:
		return q, fmt.Errorf("%w: empty input request", ErrUnknownInputMethod)
	default:
		return q, fmt.Errorf("%w: %T", ErrUnknownInputMethod, ir)
	}
	return q, nil
}

// ask hands one question to the SDK's receiving handler.
func (d *driver) ask(ctx context.Context, q question) (mcp.InputResponse, error) {
	res, err := d.recv(context.WithValue(ctx, keyContextKey{}, q.key), q.method, q.req)
	if err != nil {
		return nil, err
	}
	switch r := res.(type) {
	case *mcp.ElicitResult:
		if r != nil {
			return r, nil
		}
	case *mcp.CreateMessageWithToolsResult:
		if r != nil {
			return r, nil
		}
	case *mcp.CreateMessageResult:
		if r != nil {
			return r, nil
		}
	case *mcp.ListRootsResult:
		if r != nil {
			return r, nil
		}
	default:
		if res != nil {
			return nil, fmt.Errorf("the handler answered with a %T", res)
		}
	}
	return nil, errors.New("the handler returned neither a result nor an error")
}

func withTools(p *mcp.CreateMessageParams) *mcp.CreateMessageWithToolsParams {
	if p == nil {
		return &mcp.CreateMessageWithToolsParams{}
	}
	msgs := make([]*mcp.SamplingMessageV2, 0, len(p.Messages))
	for _, m := range p.Messages {
		if m == nil {
			continue
		}
		var content []mcp.Content
		if m.Content != nil {
			content = []mcp.Content{m.Content}
		}
		msgs = append(msgs, &mcp.SamplingMessageV2{Role: m.Role, Content: content})
	}
	return &mcp.CreateMessageWithToolsParams{
		Meta:             p.Meta,
		IncludeContext:   p.IncludeContext,
		MaxTokens:        p.MaxTokens,
		Messages:         msgs,
		Metadata:         p.Metadata,
		ModelPreferences: p.ModelPreferences,
		StopSequences:    p.StopSequences,
		SystemPrompt:     p.SystemPrompt,
		Temperature:      p.Temperature,
	}
}

// isUnknownInputMethod recognises the SDK's failure to decode a result
// whose inputRequests name a method it does not know
// (InputRequestMap.UnmarshalJSON in mcp/protocol.go). The SDK has no error
// value for it, only this text.
func isUnknownInputMethod(err error) bool {
	return strings.Contains(err.Error(), "unsupported InputRequest method")
}
