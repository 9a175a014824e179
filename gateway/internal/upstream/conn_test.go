package upstream

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var legacyOnly = &mcp.ServerOptions{SupportedProtocolVersions: []string{EraLegacy}}

// TestEraProbe: an unpinned upstream is probed with server/discover and
// spoken to in the newest era it supports; a pinned one in its era only.
func TestEraProbe(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		server *mcp.ServerOptions
		era    string
		want   string // "" means the connection must fail
	}{
		{"probed, modern server", nil, EraAuto, EraModern},
		{"probed, legacy server", legacyOnly, EraAuto, EraLegacy},
		{"pinned legacy", nil, EraLegacy, EraLegacy},
		{"pinned modern", nil, EraModern, EraModern},
		{"pinned modern, legacy server", legacyOnly, EraModern, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := &memServer{s: newServer(tc.server)}
			r := run(t, Spec{Name: "up", Era: tc.era, Connect: m.connect}, nil)
			if tc.want == "" {
				h := r.waitFor("down", func(h Health) bool { return h.State == StateDown })
				if !strings.Contains(h.LastError, "pinned to "+EraModern) || r.c.Era() != "" {
					t.Errorf("health %+v, era %q; want down, saying the era is pinned", h, r.c.Era())
				}
				return
			}
			h := r.up()
			if h.Era != tc.want || r.c.Era() != tc.want || h.Transport != "custom" || h.Tools != 1 {
				t.Errorf("health %+v, want era %s, one tool", h, tc.want)
			}
			l := r.c.Listing()
			if len(l.Tools) != 1 || l.Tools[0].Upstream != "up" || l.Tools[0].Name != "echo" || l.Upstream != "up" {
				t.Errorf("listing %+v", l)
			}
			step, err := r.call(t.Context(), "echo", `{"a":1}`)
			if err != nil || resultText(t, step) != `{"a":1}` {
				t.Errorf("echo = %+v, %v", step, err)
			}
		})
	}
}

// TestProbeTimeoutFallsBack: an upstream that does not answer
// server/discover within ProbeTimeout is connected again with initialize.
func TestProbeTimeoutFallsBack(t *testing.T) {
	t.Parallel()
	s := newServer(nil)
	var probes atomic.Int32
	release := make(chan struct{})
	defer close(release)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "server/discover" {
				probes.Add(1)
				select {
				case <-ctx.Done():
				case <-release:
				}
				return nil, errors.New("too late")
			}
			return next(ctx, method, req)
		}
	})
	m := &memServer{s: s}
	r := run(t, Spec{Name: "up", Connect: m.connect, ProbeTimeout: 50 * time.Millisecond}, nil)
	if h := r.up(); h.Era != EraLegacy {
		t.Errorf("era %q, want %s", h.Era, EraLegacy)
	}
	if probes.Load() != 1 || m.attempts.Load() != 2 {
		t.Errorf("%d probes in %d connection attempts, want one probe, then a second attempt", probes.Load(), m.attempts.Load())
	}
}

// TestRelistOnListChanged: when the upstream says a list changed, it is
// listed again and the change is reported with its kind, in both eras.
func TestRelistOnListChanged(t *testing.T) {
	t.Parallel()
	for _, era := range []string{EraLegacy, EraModern} {
		t.Run(era, func(t *testing.T) {
			t.Parallel()
			s := newServer(&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{
				Tools: &mcp.ToolCapabilities{ListChanged: true}, Prompts: &mcp.PromptCapabilities{ListChanged: true}}})
			m := &memServer{s: s}
			r := run(t, Spec{Name: "up", Era: era, Connect: m.connect}, nil)
			r.up()
			s.AddTool(&mcp.Tool{Name: "second", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return textResult("2"), nil
			})
			r.waitFor("the new tool", func(h Health) bool { return h.Tools == 2 })
			if k := r.nextListChange(); k&ListTools == 0 {
				t.Errorf("reported kinds %b, want tools", k)
			}
			s.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{}, nil
			})
			r.waitFor("the new prompt", func(h Health) bool { return h.Prompts == 1 })
			if k := r.nextListChange(); k&ListPrompts == 0 {
				t.Errorf("reported kinds %b, want prompts", k)
			}
			if l := r.c.Listing(); len(l.Prompts) != 1 || l.Prompts[0].Upstream != "up" {
				t.Errorf("prompts %+v", l.Prompts)
			}
		})
	}
}

// TestReconnectsAfterTheConnectionEnds: a lost connection fails the call
// in flight with a transient error, and the Conn connects again; Recover
// returns once it has.
func TestReconnectsAfterTheConnectionEnds(t *testing.T) {
	t.Parallel()
	s := newServer(nil)
	entered := make(chan struct{}, 1)
	s.AddTool(&mcp.Tool{Name: "hang", InputSchema: objectSchema}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		entered <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	m := &memServer{s: s}
	r := run(t, Spec{Name: "up", Era: EraLegacy, Connect: m.connect, Restart: Restart{Initial: time.Millisecond}}, nil)
	r.up()
	errc := make(chan error, 1)
	go func() {
		_, err := r.call(t.Context(), "hang", `{}`)
		errc <- err
	}()
	<-entered
	m.cut()
	err := <-errc
	var te *TransientError
	if !errors.As(err, &te) || te.Kind != FailConnection || !te.Sent || te.Upstream != "up" {
		t.Fatalf("call = %v, want a transient connection loss after sending", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), bound)
	defer cancel()
	if err := r.c.Recover(ctx, err); err != nil {
		t.Fatalf("Recover = %v", err)
	}
	if step, err := r.call(t.Context(), "echo", `{}`); err != nil || resultText(t, step) != `{}` {
		t.Errorf("echo once recovered = %+v, %v", step, err)
	}
	h := r.up()
	if h.Restarts != 1 || m.attempts.Load() != 2 {
		t.Errorf("restarts %d after %d attempts, want 1 after 2", h.Restarts, m.attempts.Load())
	}
}

// TestConnectFailuresAreRetried: an upstream that cannot be reached is
// down with its error, and tried again with back-off until it comes.
func TestConnectFailuresAreRetried(t *testing.T) {
	t.Parallel()
	m := &memServer{s: newServer(nil)}
	var fails atomic.Int32
	connect := func(ctx context.Context) (mcp.Transport, error) {
		if fails.Add(1) <= 3 {
			return nil, errors.New("connection refused")
		}
		return m.connect(ctx)
	}
	r := run(t, Spec{Name: "up", Connect: connect, Restart: Restart{Initial: time.Millisecond, Max: 4 * time.Millisecond}}, nil)
	h := r.waitFor("down", func(h Health) bool { return h.State == StateDown })
	if !strings.Contains(h.LastError, "connection refused") {
		t.Errorf("last error %q", h.LastError)
	}
	if _, err := r.c.Start(t.Context(), Request{Method: MethodCallTool, Name: "echo"}); !errors.Is(err, ErrDown) || !Transient(err) {
		t.Errorf("Start while down = %v, want a transient ErrDown", err)
	}
	r.up()
	if fails.Load() != 4 {
		t.Errorf("%d attempts, want 4", fails.Load())
	}
}

// TestLazyConnectsWhenWanted: a lazy upstream stays idle until a call
// wants it.
func TestLazyConnectsWhenWanted(t *testing.T) {
	t.Parallel()
	m := &memServer{s: newServer(nil)}
	r := run(t, Spec{Name: "up", Connect: m.connect, Lazy: true}, nil)
	if h := r.c.Health(); h.State != StateIdle || m.attempts.Load() != 0 {
		t.Fatalf("health %+v after %d attempts, want idle before any call", h, m.attempts.Load())
	}
	if _, err := r.c.Start(t.Context(), Request{Method: MethodCallTool, Name: "echo"}); !errors.Is(err, ErrDown) {
		t.Errorf("first Start = %v, want ErrDown while it connects", err)
	}
	r.up()
}

// TestCallBounds: a call that outlives CallTimeout fails as a timeout; a
// cancelled one ends with the caller's error and the upstream sees the
// cancellation; calls beyond MaxInflight fail at once.
func TestCallBounds(t *testing.T) {
	t.Parallel()
	for _, era := range []string{EraLegacy, EraModern} {
		t.Run(era, func(t *testing.T) {
			t.Parallel()
			s := newServer(nil)
			s.AddTool(&mcp.Tool{Name: "slow", InputSchema: objectSchema}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			})
			entered, left := make(chan struct{}, 4), make(chan struct{}, 4)
			s.AddTool(&mcp.Tool{Name: "hang", InputSchema: objectSchema}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				entered <- struct{}{}
				<-ctx.Done()
				left <- struct{}{}
				return nil, ctx.Err()
			})
			m := &memServer{s: s}
			r := run(t, Spec{Name: "up", Era: era, Connect: m.connect, CallTimeout: 100 * time.Millisecond}, &Options{MaxInflight: 1})
			r.up()

			_, err := r.call(t.Context(), "slow", `{}`)
			var te *TransientError
			if !errors.As(err, &te) || te.Kind != FailTimeout {
				t.Errorf("slow call = %v (%T), want a transient timeout", err, err)
			}

			ctx, cancel := context.WithCancel(t.Context())
			ex, err := r.c.Start(ctx, Request{Method: MethodCallTool, Name: "hang", Arguments: []byte(`{}`)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.c.Start(t.Context(), Request{Method: MethodCallTool, Name: "echo"}); err == nil || !strings.Contains(err.Error(), "1 calls in flight") {
				t.Errorf("a second call beyond MaxInflight 1: %v", err)
			}
			errc := make(chan error, 1)
			go func() {
				_, err := ex.Next(ctx)
				errc <- err
			}()
			<-entered
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) || Transient(err) {
				t.Errorf("cancelled call = %v, want context.Canceled", err)
			}
			<-left // the upstream's handler saw the cancellation
			ex.Close()
			if step, err := r.call(t.Context(), "echo", `{}`); err != nil || step.Result == nil {
				t.Errorf("a call after the first was closed = %+v, %v", step, err)
			}
		})
	}
}

// TestLegacyQuestions: a legacy upstream's elicitation in the middle of a
// call is a step of the call's exchange, and the answer reaches it.
func TestLegacyQuestions(t *testing.T) {
	t.Parallel()
	s := newServer(nil)
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: objectSchema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{
			"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
		if err != nil {
			return nil, err
		}
		return textResult(res.Action + ":" + res.Content["name"].(string)), nil
	})
	m := &memServer{s: s}
	r := run(t, Spec{Name: "up", Era: EraLegacy, Connect: m.connect}, nil)
	r.up()
	ex, err := r.c.Start(t.Context(), Request{Method: MethodCallTool, Name: "ask", Arguments: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	step, err := ex.Next(t.Context())
	if err != nil || len(step.Questions) != 1 || step.Questions[0].Method != MethodElicit || ex.Stateless() {
		t.Fatalf("first step %+v, %v; want one elicitation", step, err)
	}
	q := step.Questions[0]
	if p, ok := q.Params.(*mcp.ElicitParams); !ok || p.Message != "name?" || !strings.Contains(string(q.Raw), `"name?"`) {
		t.Errorf("question %+v raw %s", q.Params, q.Raw)
	}
	if err := ex.Answer(mcp.InputResponseMap{q.Key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}}); err != nil {
		t.Fatal(err)
	}
	step, err = ex.Next(t.Context())
	if err != nil || resultText(t, step) != "accept:ada" {
		t.Errorf("final step %+v, %v", step, err)
	}
}

// TestModernQuestions: a 2026-07-28 upstream's input_required result is a
// step with its questions, raw, and its requestState; the answers go back
// with that state, on the same exchange or on a new one that resumes it.
func TestModernQuestions(t *testing.T) {
	t.Parallel()
	s := newServer(nil)
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: objectSchema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Params.RequestState == "" {
			return &mcp.CallToolResult{RequestState: "round-1", InputRequests: mcp.InputRequestMap{"name": &mcp.ElicitParams{
				Mode: "form", Message: "name?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}}}, nil
		}
		res, _ := req.Params.InputResponses["name"].(*mcp.ElicitResult)
		if req.Params.RequestState != "round-1" || res == nil {
			return nil, errors.New("not the first round's state and answer")
		}
		return textResult(res.Action + ":" + res.Content["name"].(string)), nil
	})
	m := &memServer{s: s}
	r := run(t, Spec{Name: "up", Era: EraModern, Connect: m.connect}, nil)
	r.up()
	answers := mcp.InputResponseMap{"name": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}}

	ex, err := r.c.Start(t.Context(), Request{Method: MethodCallTool, Name: "ask", Arguments: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	step, err := ex.Next(t.Context())
	if err != nil || len(step.Questions) != 1 || step.State != "round-1" || !ex.Stateless() {
		t.Fatalf("first step %+v, %v; want one question and the upstream's state", step, err)
	}
	q := step.Questions[0]
	if q.Key != "name" || q.Method != MethodElicit || !strings.Contains(string(q.Raw), `"message":"name?"`) {
		t.Errorf("question %+v raw %s", q, q.Raw)
	}
	ex.Answer(answers)
	if step, err := ex.Next(t.Context()); err != nil || resultText(t, step) != "accept:ada" {
		t.Errorf("answered on the same exchange: %+v, %v", step, err)
	}

	resumed, err := r.c.Start(t.Context(), Request{Method: MethodCallTool, Name: "ask", Arguments: []byte(`{}`), Resume: &Resume{State: "round-1", Answers: answers}})
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Close()
	if step, err := resumed.Next(t.Context()); err != nil || resultText(t, step) != "accept:ada" {
		t.Errorf("resumed on a new exchange: %+v, %v", step, err)
	}
}

// TestLegacyCannotResume: a legacy upstream's call cannot be continued
// from a requestState, and the refusal holds no slot.
func TestLegacyCannotResume(t *testing.T) {
	t.Parallel()
	m := &memServer{s: newServer(nil)}
	r := run(t, Spec{Name: "up", Era: EraLegacy, Connect: m.connect}, &Options{MaxInflight: 1})
	r.up()
	for range 2 {
		if _, err := r.c.Start(t.Context(), Request{Method: MethodCallTool, Name: "echo", Resume: &Resume{State: "x"}}); err == nil || !strings.Contains(err.Error(), "cannot be resumed") {
			t.Errorf("Start with a requestState = %v", err)
		}
	}
	if step, err := r.call(t.Context(), "echo", `{}`); err != nil || step.Result == nil {
		t.Errorf("echo after the refusals = %+v, %v", step, err)
	}
}
