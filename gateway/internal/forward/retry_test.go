package forward

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/tracing"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/resolve"
)

// resolved returns a Resolution from source with annotations a.
func resolved(source string, a preflight.Annotations) *call.Resolution {
	return &call.Resolution{Resolution: resolve.Resolution{Annotations: a}, Source: source}
}

var (
	readOnly   = preflight.Annotations{ReadOnlyHint: true}
	idempotent = preflight.Annotations{IdempotentHint: true, DestructiveHint: true}
	mutating   = preflight.Annotations{DestructiveHint: true}
)

// script is a send function that fails with errs in turn, then succeeds,
// recording when each attempt was made.
type script struct {
	mu    sync.Mutex
	errs  []error
	times []time.Time
}

func (s *script) send(ctx context.Context, c *call.Call) (json.RawMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.times = append(s.times, time.Now())
	if n := len(s.times); n <= len(s.errs) {
		return nil, s.errs[n-1]
	}
	return json.RawMessage(`{"content":[]}`), nil
}

func (s *script) attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.times)
}

func transient(sent bool) error {
	return &upstream.TransientError{Upstream: "up", Kind: upstream.FailConnection, Sent: sent, Err: errors.New("connection reset")}
}

// recorder is a RetryObserver that remembers what it heard.
type recorder struct {
	mu      sync.Mutex
	retried []string
	gaveUp  []string
}

func (r *recorder) Retried(server, kind string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.retried = append(r.retried, server+":"+kind)
}

func (r *recorder) GaveUp(server, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gaveUp = append(r.gaveUp, server+":"+reason)
}

// retryData decodes the data of the retrier's give-up error.
func retryData(t *testing.T, err error) (msg string, data struct {
	Outcome  string `json:"outcome"`
	Retried  bool   `json:"retried"`
	Attempts int    `json:"attempts"`
	Reason   string `json:"reason"`
	Failure  string `json:"failure"`
}) {
	t.Helper()
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInternalError {
		t.Fatalf("error %v, want a JSON-RPC internal error", err)
	}
	if err := json.Unmarshal(we.Data, &data); err != nil {
		t.Fatalf("data %s: %v", we.Data, err)
	}
	return we.Message, data
}

// TestRetryOnlyWhatIsSafe: a failure whose request may have reached the
// upstream is retried only for a call resolved as read-only or
// idempotent; one that never reached it is retried whatever the call.
func TestRetryOnlyWhatIsSafe(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		method     string
		resolution *call.Resolution
		sent       bool
		retried    bool
		reason     string
		outcome    string
	}{
		{"read-only, sent", call.ToolsCall, resolved("upstream", readOnly), true, true, "", "ok"},
		{"idempotent by a rule, sent", call.ToolsCall, resolved("rules", idempotent), true, true, "", "ok"},
		{"idempotent by the hint, sent", call.ToolsCall, &call.Resolution{Source: "override",
			Resolution: resolve.Resolution{Annotations: mutating, Hints: hints.Hints{Idempotent: hints.Bool(true)}}}, true, true, "", "ok"},
		{"mutating, sent", call.ToolsCall, resolved("upstream", mutating), true, false, RetryNotIdempotent, "unknown"},
		{"static declaration, sent", call.ToolsCall, resolved("static", readOnly), true, false, RetryNotResolved, "unknown"},
		{"unresolved, sent", call.ToolsCall, nil, true, false, RetryNotResolved, "unknown"},
		{"resource read, sent", call.ResourcesRead, nil, true, false, RetryNotResolved, "unknown"},
		{"mutating, never sent", call.ToolsCall, resolved("upstream", mutating), false, true, "", "ok"},
		{"unresolved, never sent", call.PromptsGet, nil, false, true, "", "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				obs := &recorder{}
				r := newRetrier(nil, obs)
				s := &script{errs: []error{transient(tc.sent)}}
				c := &call.Call{Method: tc.method, Name: "t", Resolution: tc.resolution}
				res, err := r.serve(t.Context(), c, s.send)
				if tc.retried {
					if err != nil || res == nil || s.attempts() != 2 || c.Attempts != 2 {
						t.Fatalf("serve = %s, %v after %d attempts (c.Attempts %d); want the second attempt's result", res, err, s.attempts(), c.Attempts)
					}
					if len(obs.retried) != 1 || obs.retried[0] != "up:"+upstream.FailConnection || len(obs.gaveUp) != 0 {
						t.Errorf("observer heard retried %v, gave up %v", obs.retried, obs.gaveUp)
					}
					return
				}
				if s.attempts() != 1 || c.Attempts != 1 {
					t.Fatalf("sent %d times, want once", s.attempts())
				}
				msg, data := retryData(t, err)
				if data.Reason != tc.reason || data.Outcome != tc.outcome || data.Retried || data.Attempts != 1 || data.Failure != upstream.FailConnection {
					t.Errorf("data %+v, want reason %s, outcome %s", data, tc.reason, tc.outcome)
				}
				if c.Outcome != tc.outcome {
					t.Errorf("c.Outcome %q, want %q", c.Outcome, tc.outcome)
				}
				if !strings.Contains(msg, "the outcome is unknown") || !strings.Contains(msg, "not retried") {
					t.Errorf("message %q does not say the outcome is unknown and why it was not retried", msg)
				}
				if len(obs.gaveUp) != 1 || obs.gaveUp[0] != "up:"+tc.reason || len(obs.retried) != 0 {
					t.Errorf("observer heard retried %v, gave up %v", obs.retried, obs.gaveUp)
				}
			})
		})
	}
}

// TestRetryPassesAnswersThrough: an error that is not transient (the
// upstream answered) and a success end the call at the first attempt.
func TestRetryPassesAnswersThrough(t *testing.T) {
	t.Parallel()
	answer := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad path"}
	for _, errs := range [][]error{nil, {answer}} {
		r := newRetrier(nil, nil)
		s := &script{errs: errs}
		c := &call.Call{Method: call.ToolsCall, Resolution: resolved("upstream", readOnly)}
		_, err := r.serve(t.Context(), c, s.send)
		if s.attempts() != 1 {
			t.Errorf("errs %v: sent %d times, want once", errs, s.attempts())
		}
		if len(errs) > 0 && err != answer {
			t.Errorf("error %v, want the upstream's own %v", err, answer)
		}
	}
}

// TestRetryAttemptsAndBackOff: a call that keeps failing is sent
// Attempts times, the n-th retry waiting between half and all of
// min(Max, Initial·2ⁿ⁻¹).
func TestRetryAttemptsAndBackOff(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p := &RetryPolicy{Attempts: 5, Initial: 100 * time.Millisecond, Max: 300 * time.Millisecond, Within: time.Hour}
		r := newRetrier(p, nil)
		s := &script{errs: []error{transient(false), transient(false), transient(false), transient(false), transient(false)}}
		c := &call.Call{Method: call.ToolsCall, Name: "t"}
		_, err := r.serve(t.Context(), c, s.send)
		_, data := retryData(t, err)
		if data.Reason != RetryAttempts || data.Attempts != 5 || !data.Retried || data.Outcome != "error" || c.Outcome != "error" {
			t.Errorf("data %+v, c.Outcome %q; want attempts spent after 5, outcome error", data, c.Outcome)
		}
		if s.attempts() != 5 {
			t.Fatalf("sent %d times, want 5", s.attempts())
		}
		ceilings := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond}
		for i, ceiling := range ceilings {
			if gap := s.times[i+1].Sub(s.times[i]); gap < ceiling/2 || gap > ceiling {
				t.Errorf("retry %d waited %v, want within [%v, %v]", i+1, gap, ceiling/2, ceiling)
			}
		}
	})
}

// TestRetryWithin: no retry starts later than Within after the call
// began, nor after the call's own deadline.
func TestRetryWithin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		within   time.Duration
		deadline time.Duration // of the call's context; 0 for none
	}{
		{"policy", 250 * time.Millisecond, 0},
		{"call deadline", time.Hour, 250 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				p := &RetryPolicy{Attempts: 100, Initial: 100 * time.Millisecond, Max: 100 * time.Millisecond, Within: tc.within, Budget: 100}
				r := newRetrier(p, nil)
				errs := make([]error, 100)
				for i := range errs {
					errs[i] = transient(false)
				}
				s := &script{errs: errs}
				ctx := t.Context()
				if tc.deadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.deadline)
					defer cancel()
				}
				start := time.Now()
				_, err := r.serve(ctx, &call.Call{Method: call.ToolsCall}, s.send)
				if tc.deadline > 0 && errors.Is(err, context.DeadlineExceeded) {
					// The call's deadline ended it while it backed off.
				} else {
					_, data := retryData(t, err)
					if data.Reason != RetryDeadline {
						t.Errorf("reason %q, want %q", data.Reason, RetryDeadline)
					}
				}
				limit := 250 * time.Millisecond
				if last := s.times[len(s.times)-1].Sub(start); last > limit {
					t.Errorf("an attempt started %v after the call began, beyond %v", last, limit)
				}
				if s.attempts() < 2 || s.attempts() > 6 {
					t.Errorf("sent %d times within %v with back-off of 50–100ms", s.attempts(), limit)
				}
			})
		})
	}
}

// TestRetrySlowAttempt: an attempt that fails after Within is not
// retried, and no retry is counted.
func TestRetrySlowAttempt(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		obs := &recorder{}
		r := newRetrier(&RetryPolicy{Within: time.Second}, obs)
		s := &script{}
		send := func(ctx context.Context, c *call.Call) (json.RawMessage, error) {
			s.send(ctx, c)
			time.Sleep(2 * time.Second)
			return nil, transient(false)
		}
		_, err := r.serve(t.Context(), &call.Call{Method: call.ToolsCall}, send)
		if _, data := retryData(t, err); data.Reason != RetryDeadline || s.attempts() != 1 {
			t.Errorf("reason %q after %d attempts, want %q after 1", data.Reason, s.attempts(), RetryDeadline)
		}
		if len(obs.retried) != 0 || len(obs.gaveUp) != 1 {
			t.Errorf("observer heard retried %v, gave up %v; want one give-up", obs.retried, obs.gaveUp)
		}
	})
}

// TestRetryBudget: an upstream's retries share a bucket; once it is
// spent, calls fail at once until a token comes back.
func TestRetryBudget(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p := &RetryPolicy{Attempts: 2, Initial: time.Millisecond, Budget: 2, Refill: time.Minute}
		r := newRetrier(p, nil)
		serve := func() (int, error) {
			s := &script{errs: []error{transient(false), transient(false)}}
			_, err := r.serve(t.Context(), &call.Call{Method: call.ToolsCall}, s.send)
			return s.attempts(), err
		}
		for range 2 {
			if n, _ := serve(); n != 2 {
				t.Fatalf("sent %d times with budget left, want 2", n)
			}
		}
		n, err := serve()
		if _, data := retryData(t, err); n != 1 || data.Reason != RetryBudget {
			t.Errorf("sent %d times, reason %q; want once, %q", n, data.Reason, RetryBudget)
		}
		time.Sleep(time.Minute)
		if n, _ := serve(); n != 2 {
			t.Errorf("sent %d times after a refill, want 2", n)
		}
	})
}

// TestRetryCancelled: a call whose client goes away is neither retried
// nor waited for.
func TestRetryCancelled(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		r := newRetrier(&RetryPolicy{Initial: time.Hour, Max: time.Hour, Within: 2 * time.Hour}, nil)
		s := &script{errs: []error{transient(false), transient(false)}}
		done := make(chan error, 1)
		go func() {
			_, err := r.serve(ctx, &call.Call{Method: call.ToolsCall}, s.send)
			done <- err
		}()
		synctest.Wait() // backing off
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("serve = %v, want context.Canceled", err)
		}
		if s.attempts() != 1 {
			t.Errorf("sent %d times, want once", s.attempts())
		}

		// Cancelled during the attempt: the failure is not retried.
		ctx, cancel = context.WithCancel(t.Context())
		s = &script{}
		send := func(ctx context.Context, c *call.Call) (json.RawMessage, error) {
			s.send(ctx, c)
			cancel()
			return nil, transient(true)
		}
		if _, err := r.serve(ctx, &call.Call{Method: call.ToolsCall}, send); !errors.Is(err, context.Canceled) || s.attempts() != 1 {
			t.Errorf("serve = %v after %d attempts, want context.Canceled after 1", err, s.attempts())
		}
	})
}

// TestRetryWaitIsTraced: in a traced call, each wait before a retry is a
// span named retry under the call's, with the server, the attempt that
// failed and the failure's kind.
func TestRetryWaitIsTraced(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		defer tp.Shutdown(context.Background())
		ctx, parent := tp.Tracer("test").Start(t.Context(), "call")
		r := newRetrier(nil, nil)
		s := &script{errs: []error{transient(false), transient(false)}}
		c := &call.Call{Method: call.ToolsCall, Name: "t", Resolution: resolved("upstream", readOnly)}
		if _, err := r.serve(ctx, c, s.send); err != nil {
			t.Fatal(err)
		}
		parent.End()
		var waits []string
		for _, sp := range exp.GetSpans() {
			if sp.Name != "retry" {
				continue
			}
			if sp.Parent.SpanID() != parent.SpanContext().SpanID() {
				t.Errorf("retry span's parent %s, want the call's %s", sp.Parent.SpanID(), parent.SpanContext().SpanID())
			}
			attrs := map[attribute.Key]string{}
			for _, a := range sp.Attributes {
				attrs[a.Key] = a.Value.String()
			}
			waits = append(waits, attrs[tracing.Server]+" "+attrs[tracing.Attempt]+" "+attrs[tracing.Failure])
		}
		want := []string{"up 1 " + upstream.FailConnection, "up 2 " + upstream.FailConnection}
		if !slices.Equal(waits, want) {
			t.Errorf("retry spans %q, want %q", waits, want)
		}
	})
}
