package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/internal/audit"
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
// MaxCalls). Of every WriteEvery calls of a client, one is a replace of
// its own file, confirmed in band (a 2026-07-28 client answers the
// input_required round, a 2025-11-25 one the elicitation within the
// call), one a read of secret.txt whose result must come redacted, and,
// every other time, one a confirmed delete of its file; the rest read
// notes.txt.
type Load struct {
	Clients  int
	Duration time.Duration
	// MaxCalls stops the run early; zero means MaxLoadCalls.
	MaxCalls int
	// WriteEvery makes every n-th call of a client a write. Zero means 4;
	// at least 3.
	WriteEvery int
}

// Report is what a load run measured.
type Report struct {
	Calls, Failed int64
	Elapsed       time.Duration
	// Failures holds the first failures, for the message.
	Failures []string
	// Done counts the calls that succeeded by CallKey; Cut counts the
	// calls cut by the end of a part, whose outcome the run does not know.
	Done map[string]int
	Cut  int64
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
	l.WriteEvery = max(l.WriteEvery, 3)
	transport := &http.Transport{MaxIdleConnsPerHost: l.Clients, MaxConnsPerHost: 0}
	defer transport.CloseIdleConnections()
	hc := &http.Client{Transport: transport, Timeout: time.Minute}

	rep := Report{Done: map[string]int{}}
	var mu sync.Mutex
	var calls, failed, cut atomic.Int64
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
				c := &Client{URL: f.URL, Version: era, HTTP: hc, OnRequest: AcceptConfirmation}
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
					want := []string{"shared notes"}
					switch {
					case n%l.WriteEvery == 0:
						content := fmt.Sprintf("client %d call %d", i, n)
						args, want = map[string]any{"action": "replace", "path": file, "content": content}, []string{"replaced"}
					case n%l.WriteEvery == 1 && n%(2*l.WriteEvery) == 1:
						args, want = map[string]any{"action": "delete", "path": file}, []string{"deleted: " + file, "already absent: " + file}
					case n%l.WriteEvery == 2:
						args, want = map[string]any{"action": "read", "path": "secret.txt"}, []string{"[REDACTED:email]"}
					}
					r, err := c.CallConfirmed(pctx, "files__manage_files", args)
					switch {
					case pctx.Err() != nil && (err != nil || r == nil):
						calls.Add(-1) // cut by the end of the part, not failed
						cut.Add(1)
						return
					case err != nil:
						fail(era + ": " + err.Error())
					case r.Error != nil:
						fail(fmt.Sprintf("%s: %d %s", era, r.Error.Code, r.Error.Message))
					case r.Result["isError"] == true || !containsAny(r.Text(), want) || strings.Contains(string(r.Raw), "alice@"):
						fail(fmt.Sprintf("%s: %.200s", era, r.Raw))
					default:
						mu.Lock()
						rep.Done[CallKey(args)]++
						mu.Unlock()
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
	rep.Calls, rep.Failed, rep.Cut = calls.Load(), failed.Load(), cut.Load()
	if ctx.Err() != nil {
		return rep, errors.New("load: cancelled")
	}
	return rep, nil
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// CallKey names a files__manage_files call by its arguments, as the audit
// records them: action, path and content.
func CallKey(args map[string]any) string {
	content, _ := args["content"].(string)
	return fmt.Sprintf("%v %v %s", args["action"], args["path"], content)
}

// AcceptConfirmation is an OnRequest that accepts the gateway's
// confirmation form, as a user would, and refuses anything else.
func AcceptConfirmation(method string, params json.RawMessage) any {
	var p struct {
		Mode            string         `json:"mode"`
		RequestedSchema map[string]any `json:"requestedSchema"`
	}
	if method != "elicitation/create" || json.Unmarshal(params, &p) != nil || (p.Mode != "" && p.Mode != "form") {
		return nil
	}
	return map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}
}

// CallConfirmed calls tool with args and, for a 2026-07-28 client, answers
// the gateway's confirmation (input_required with preflight/confirm) by
// accepting it, for at most a few rounds. A legacy client answers within
// the call through OnRequest.
func (c *Client) CallConfirmed(ctx context.Context, tool string, args map[string]any) (*Response, error) {
	params := map[string]any{"name": tool, "arguments": args}
	for range 3 {
		r, err := c.Call(ctx, "tools/call", params)
		if err != nil || r.Error != nil || r.Result["resultType"] != "input_required" {
			return r, err
		}
		reqs, _ := r.Result["inputRequests"].(map[string]any)
		if _, ok := reqs["preflight/confirm"]; !ok || len(reqs) != 1 {
			return r, nil
		}
		params = map[string]any{"name": tool, "arguments": args, "requestState": r.Result["requestState"],
			"inputResponses": map[string]any{"preflight/confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}
	}
	return nil, errors.New(tool + ": still asking after 3 rounds")
}

// CheckAudit compares the shared audit log's records of the files
// server since since with the calls a run reports done: each done call
// must be recorded as done exactly as many times as it was made; a call
// cut by the end of the run may be recorded once more (cut bounds how
// many). It returns what differs, empty when the log agrees.
//
// The records of reads are written in batches after the calls return, so
// a record may land shortly after its call was done: CheckAudit reads the
// log again while records are missing, for up to auditSettle.
func (f *Fleet) CheckAudit(ctx context.Context, since time.Time, done map[string]int, cut int64) ([]string, error) {
	deadline := time.Now().Add(auditSettle)
	for {
		diffs, missing, err := f.checkAudit(ctx, since, done, cut)
		if err != nil || !missing || time.Now().After(deadline) {
			return diffs, err
		}
		select {
		case <-ctx.Done():
			return diffs, nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// auditSettle bounds the wait for batched audit records.
const auditSettle = 10 * time.Second

// checkAudit reads the log once; missing reports records not (yet) there.
func (f *Fleet) checkAudit(ctx context.Context, since time.Time, done map[string]int, cut int64) (diffs []string, missing bool, err error) {
	recs, err := f.Audit(ctx, audit.Filter{Since: since, Server: "files", Tool: "manage_files", Outcome: audit.OutcomeOK})
	if err != nil {
		return nil, false, err
	}
	got := map[string]int{}
	for _, r := range recs {
		var a map[string]any
		if err := json.Unmarshal(r.Args, &a); err != nil {
			return nil, false, fmt.Errorf("audit record %d: args %q: %w", r.ID, r.Args, err)
		}
		got[CallKey(a)]++
	}
	extra := int64(0)
	for k, n := range got {
		switch {
		case n < done[k]:
			missing = true
			diffs = append(diffs, fmt.Sprintf("%q: done %d times, recorded %d", k, done[k], n))
		case n > done[k]:
			extra += int64(n - done[k])
			if extra > cut {
				diffs = append(diffs, fmt.Sprintf("%q: done %d times, recorded %d", k, done[k], n))
			}
		}
	}
	for k, n := range done {
		if _, ok := got[k]; !ok {
			missing = true
			diffs = append(diffs, fmt.Sprintf("%q: done %d times, never recorded", k, n))
		}
	}
	return diffs, missing, nil
}
