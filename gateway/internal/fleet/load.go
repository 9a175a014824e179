package fleet

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/preflightmcp/preflight/gateway"
)

// Limits of a load run: it is bounded in time and in calls whatever it is
// told.
const (
	MaxLoadDuration = 30 * time.Minute
	MaxLoadClients  = 256
	MaxLoadCalls    = 10_000_000
)

// Load describes a load run: Clients concurrent clients, half of each era,
// calling through the fleet's load balancer for Duration (or until
// MaxCalls), each call a read or a write of the example servers.
type Load struct {
	Clients  int
	Duration time.Duration
	// MaxCalls stops the run early; zero means MaxLoadCalls.
	MaxCalls int
	// WriteEvery makes every n-th call of a client a write. Zero means 4.
	WriteEvery int
}

// Report is what a load run measured.
type Report struct {
	Calls, Failed int64
	Elapsed       time.Duration
	// Failures holds the first failures, for the message.
	Failures []string
	// Early and Late are each replica's runtime figures after the first
	// and the last part of the run (the clients idle, legacy sessions
	// closed), by replica name.
	Early, Late map[string]gateway.Runtime
}

// Rate is the calls a second.
func (r Report) Rate() float64 { return float64(r.Calls) / r.Elapsed.Seconds() }

func (r Report) String() string {
	return fmt.Sprintf("%d calls in %v (%.0f calls/s), %d failed", r.Calls, r.Elapsed.Round(time.Millisecond), r.Rate(), r.Failed)
}

// Run drives l against f: a warm-up part of a tenth of the duration, after
// which each replica's runtime is read (Early), then the rest, then the
// runtime again (Late). Every call must succeed: a failure is counted and
// its first words kept.
func (f *Fleet) Run(ctx context.Context, l Load) (Report, error) {
	if l.Clients <= 0 || l.Clients > MaxLoadClients {
		return Report{}, fmt.Errorf("load: %d clients, want 1 to %d", l.Clients, MaxLoadClients)
	}
	if l.Duration <= 0 || l.Duration > MaxLoadDuration {
		return Report{}, fmt.Errorf("load: duration %v, want up to %v", l.Duration, MaxLoadDuration)
	}
	if l.MaxCalls <= 0 || l.MaxCalls > MaxLoadCalls {
		l.MaxCalls = MaxLoadCalls
	}
	if l.WriteEvery <= 0 {
		l.WriteEvery = 4
	}
	transport := &http.Transport{MaxIdleConnsPerHost: l.Clients, MaxConnsPerHost: 0}
	defer transport.CloseIdleConnections()
	hc := &http.Client{Transport: transport, Timeout: time.Minute}

	var rep Report
	var mu sync.Mutex
	var calls, failed atomic.Int64
	fail := func(s string) {
		failed.Add(1)
		mu.Lock()
		if len(rep.Failures) < 10 {
			rep.Failures = append(rep.Failures, s)
		}
		mu.Unlock()
	}
	part := func(d time.Duration) {
		pctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		var wg sync.WaitGroup
		for i := range l.Clients {
			wg.Go(func() {
				era := Modern
				if i%2 == 1 {
					era = Legacy
				}
				c := &Client{URL: f.URL, Version: era, HTTP: hc}
				defer func() {
					cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					_ = c.Close(cctx)
				}()
				for n := 0; pctx.Err() == nil; n++ {
					if calls.Add(1) > int64(l.MaxCalls) {
						calls.Add(-1)
						return
					}
					file := fmt.Sprintf("load-%d.txt", i)
					args := map[string]any{"action": "read", "path": "notes.txt"}
					want := "shared notes"
					if n%l.WriteEvery == 0 {
						content := fmt.Sprintf("client %d call %d", i, n)
						args, want = map[string]any{"action": "replace", "path": file, "content": content}, ""
					}
					r, err := c.Call(pctx, "tools/call", map[string]any{"name": "files__manage_files", "arguments": args})
					switch {
					case pctx.Err() != nil && (err != nil || r == nil):
						calls.Add(-1) // cut by the end of the part, not failed
						return
					case err != nil:
						fail(era + ": " + err.Error())
					case r.Error != nil:
						fail(fmt.Sprintf("%s: %d %s", era, r.Error.Code, r.Error.Message))
					case r.Result["isError"] == true || !strings.Contains(r.Text(), want):
						fail(fmt.Sprintf("%s: %.200s", era, r.Raw))
					}
				}
			})
		}
		wg.Wait()
	}
	runtimes := func() (map[string]gateway.Runtime, error) {
		out := map[string]gateway.Runtime{}
		for _, r := range f.Replicas {
			if !r.Alive() {
				continue
			}
			h, err := r.Health(ctx)
			if err != nil {
				return nil, err
			}
			out[r.Name] = h.Runtime
		}
		return out, nil
	}
	start := time.Now()
	warm := l.Duration / 10
	part(warm)
	var err error
	if rep.Early, err = runtimes(); err != nil {
		return rep, err
	}
	part(l.Duration - warm)
	rep.Elapsed = time.Since(start)
	if rep.Late, err = runtimes(); err != nil {
		return rep, err
	}
	rep.Calls, rep.Failed = calls.Load(), failed.Load()
	if ctx.Err() != nil {
		return rep, errors.New("load: cancelled")
	}
	return rep, nil
}
