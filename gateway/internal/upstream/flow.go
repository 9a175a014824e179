package upstream

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK client hands a response to its caller as soon as it reads it,
// but queues notifications for a handler goroutine, so a call's result can
// overtake the progress and log notifications the upstream sent before it.
// The gateway would then answer its client first and find the client's
// request finished when the notifications come: they would be lost. flow is
// the barrier that keeps them in order: the transport counts the
// notifications it reads (observed), the client's receiving middleware
// counts those handled, and a call whose response was read after n
// notifications waits, briefly, until n are handled before it returns.

// flowMethods are the notifications a call's result must not overtake.
func flowMethod(m string) bool {
	return m == "notifications/progress" || m == "notifications/message"
}

// maxFlowWait bounds the wait (a notification the SDK cannot decode is
// never handled).
const maxFlowWait = time.Second

type flow struct {
	observed atomic.Int64
	mu       sync.Mutex
	handled  int64
	changed  chan struct{}
}

func newFlow() *flow { return &flow{changed: make(chan struct{})} }

func (f *flow) observe() { f.observed.Add(1) }

func (f *flow) handle() {
	f.mu.Lock()
	f.handled++
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

// wait waits until target notifications are handled, ctx is done or
// maxFlowWait passed.
func (f *flow) wait(ctx context.Context, target int64) {
	var timer *time.Timer
	for {
		f.mu.Lock()
		done, ch := f.handled >= target, f.changed
		f.mu.Unlock()
		if done {
			return
		}
		if timer == nil {
			timer = time.NewTimer(maxFlowWait)
			defer timer.Stop()
		}
		select {
		case <-ch:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// countHandled is a receiving middleware of the upstream client that counts
// the flow notifications it has handled.
func (c *Conn) countHandled(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if flowMethod(method) {
			if f := c.flow.Load(); f != nil {
				f.handle()
			}
		}
		return res, err
	}
}
