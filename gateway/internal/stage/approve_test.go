package stage_test

import (
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
	"github.com/preflightmcp/preflight/requeststate"
)

const pageURL = "http://127.0.0.1:7780/ui"

// newApprove returns the approve stage in front of svc, with its own ring.
func newApprove(t testing.TB, svc *approval.Service) *stage.Approve {
	t.Helper()
	ring, err := requeststate.NewRandomRing(nil)
	if err != nil {
		t.Fatal(err)
	}
	return stage.NewApprove(stage.Approve{Approvals: svc, Ring: ring, PageURL: func() string { return pageURL }, ResumeWait: time.Second})
}

// pending returns alice's one pending request.
func pending(t testing.TB, svc *approval.Service) *approval.Request {
	t.Helper()
	rs, err := svc.List(t.Context(), "alice", 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []*approval.Request
	for _, r := range rs {
		if r.State == approval.Pending {
			out = append(out, r)
		}
	}
	if len(out) != 1 {
		t.Fatalf("%d pending requests, want 1", len(out))
	}
	return out[0]
}

var alice = approval.Approver{Principal: "alice", Name: "Alice"}

// TestApprovePassesCallsItNeedNotHold: calls without a Confirm decision,
// dry runs and calls confirmed already go on without a request.
func TestApprovePassesCallsItNeedNotHold(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		decision *call.Decision
		conf     *call.Confirmation
	}{
		{"no decision", nil, nil},
		{"allow", &call.Decision{Verdict: call.Allow}, nil},
		{"dry run", &call.Decision{Verdict: call.Confirm, DryRun: true}, nil},
		{"confirmed in band", &call.Decision{Verdict: call.Confirm}, &call.Confirmation{By: "client"}},
	} {
		svc := approval.New(nil, nil)
		c := deleteCall(t, &fakeConn{}, nil, `{"path":"/tmp/a"}`)
		c.Decision, c.Confirmation = tc.decision, tc.conf
		next := &upstreamNext{}
		if _, err := newApprove(t, svc).Serve(t.Context(), c, next); err != nil || next.count() != 1 {
			t.Errorf("%s: forwarded %d times, %v; want once", tc.name, next.count(), err)
		}
		if rs, _ := svc.List(t.Context(), "alice", 0); len(rs) != 0 {
			t.Errorf("%s: %d approval requests opened", tc.name, len(rs))
		}
	}
}

// TestApproveRetryText: a client that cannot be asked to open the page is
// told where to approve and to retry; the retry after the approval runs
// the call once, and the next asks anew. Nothing is forwarded before.
func TestApproveRetryText(t *testing.T) {
	t.Parallel()
	svc := approval.New(nil, nil)
	a := newApprove(t, svc)
	next := &upstreamNext{}
	c := deleteCall(t, &fakeConn{}, formCaps, `{"path":"/tmp/a"}`)
	res, err := a.Serve(t.Context(), c, next)
	r := pending(t, svc)
	wantToolError(t, res, err, "Not run", pageURL+"/approvals/"+r.ID, "retry the call with exactly the same arguments")
	if c.Outcome != "input_required" || next.count() != 0 {
		t.Fatalf("outcome %q, forwarded %d times before approval", c.Outcome, next.count())
	}
	if r.Server != "files" || r.Tool != "delete" || r.Principal != "alice" || r.Reason != "it deletes files" {
		t.Errorf("request %+v, want alice's files/delete with the decision's reason", r)
	}

	again := retryOf(c, "", nil)
	res, err = a.Serve(t.Context(), again, next)
	wantToolError(t, res, err, r.ID)
	if next.count() != 0 {
		t.Fatal("a retry before the decision was forwarded")
	}

	if _, err := svc.Approve(t.Context(), r.ID, alice); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Serve(t.Context(), retryOf(c, "", nil), next); err != nil || next.count() != 1 {
		t.Fatalf("approved retry: forwarded %d times, %v", next.count(), err)
	}
	if next.conf == nil || next.conf.By != "page" || next.conf.RequestID != r.ID || next.conf.Approver != "Alice" {
		t.Errorf("confirmation %+v, want the page's, by Alice, of %s", next.conf, r.ID)
	}

	res, err = a.Serve(t.Context(), retryOf(c, "", nil), next)
	wantToolError(t, res, err, "Not run")
	if next.count() != 1 || pending(t, svc).ID == r.ID {
		t.Error("one approval ran the call twice")
	}
}

// TestApproveDenied: a denied call ends with a tool error that says so.
func TestApproveDenied(t *testing.T) {
	t.Parallel()
	svc := approval.New(nil, nil)
	a := newApprove(t, svc)
	next := &upstreamNext{}
	c := deleteCall(t, &fakeConn{}, nil, `{"path":"/tmp/a"}`)
	a.Serve(t.Context(), c, next)
	if _, err := svc.Deny(t.Context(), pending(t, svc).ID, alice); err != nil {
		t.Fatal(err)
	}
	retry := retryOf(c, "", nil)
	res, err := a.Serve(t.Context(), retry, next)
	wantToolError(t, res, err, "was denied", "Do not retry")
	if next.count() != 0 || retry.Outcome != "denied" {
		t.Errorf("forwarded %d times, outcome %q", next.count(), retry.Outcome)
	}
}

// TestApproveNotShowable: a call whose arguments the page cannot show
// whole is not run, and the client is told to make it smaller.
func TestApproveNotShowable(t *testing.T) {
	t.Parallel()
	svc := approval.New(nil, &approval.Options{ShowBytes: 64})
	next := &upstreamNext{}
	c := deleteCall(t, &fakeConn{}, nil, `{"path":"/tmp/`+strings.Repeat("a", 100)+`"}`)
	res, err := newApprove(t, svc).Serve(t.Context(), c, next)
	wantToolError(t, res, err, "cannot be approved on the approval page", "smaller arguments")
	if next.count() != 0 || c.Outcome != "denied" {
		t.Errorf("forwarded %d times, outcome %q", next.count(), c.Outcome)
	}
}

// TestApproveInRounds: a client that answers in a later round gets a URL
// elicitation with a requestState; its retry waits for the decision and
// runs the call once it is approved; the state is good for one call.
func TestApproveInRounds(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		svc := approval.New(nil, nil)
		a := newApprove(t, svc)
		next := &upstreamNext{}
		c := deleteCall(t, &fakeConn{err: call.ErrRound}, urlCaps, `{"path":"/tmp/a"}`)
		res, err := a.Serve(t.Context(), c, next)
		if err != nil {
			t.Fatal(err)
		}
		qs, token := inputRequired(t, res)
		r := pending(t, svc)
		var q struct {
			Params mcp.ElicitParams `json:"params"`
		}
		if err := json.Unmarshal(qs[approval.InputKey], &q); err != nil || q.Params.Mode != "url" || q.Params.URL != pageURL+"/approvals/"+r.ID {
			t.Fatalf("question %s (%v), want the page's link", qs[approval.InputKey], err)
		}

		// Retried before the decision: asked again after ResumeWait.
		start := time.Now()
		res, err = a.Serve(t.Context(), retryOf(c, token, mcp.InputResponseMap{approval.InputKey: &mcp.ElicitResult{Action: "accept"}}), next)
		if err != nil {
			t.Fatal(err)
		}
		inputRequired(t, res)
		if waited := time.Since(start); waited != time.Second || next.count() != 0 {
			t.Fatalf("waited %v, forwarded %d times; want ResumeWait and none", waited, next.count())
		}

		// Another call's arguments: the state is refused.
		other := retryOf(c, token, nil)
		other.Arguments = json.RawMessage(`{"path":"/etc"}`)
		_, err = a.Serve(t.Context(), other, next)
		wantWireError(t, err, requeststate.WireCode)

		if _, err := svc.Approve(t.Context(), r.ID, alice); err != nil {
			t.Fatal(err)
		}
		retry := retryOf(c, token, mcp.InputResponseMap{approval.InputKey: &mcp.ElicitResult{Action: "accept"}, "up/q": &mcp.ElicitResult{Action: "accept"}})
		if _, err := a.Serve(t.Context(), retry, next); err != nil || next.count() != 1 {
			t.Fatalf("approved retry: forwarded %d times, %v", next.count(), err)
		}
		if next.conf == nil || next.conf.By != "page" || next.state != "" || len(retry.InputResponses) != 1 {
			t.Errorf("confirmation %+v, state %q, answers %v; want the page's, the state and the approval's answer consumed", next.conf, next.state, retry.InputResponses)
		}

		replay := retryOf(c, token, nil)
		res, err = a.Serve(t.Context(), replay, next)
		wantToolError(t, res, err, "used already")
		if next.count() != 1 {
			t.Error("a replayed state ran the call again")
		}
	})
}

// TestApproveRoundLapsed: a retry after the request expired is not run.
func TestApproveRoundLapsed(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		svc := approval.New(nil, &approval.Options{TTL: time.Minute})
		a := newApprove(t, svc)
		next := &upstreamNext{}
		c := deleteCall(t, &fakeConn{err: call.ErrRound}, urlCaps, `{}`)
		res, _ := a.Serve(t.Context(), c, next)
		_, token := inputRequired(t, res)
		time.Sleep(2 * time.Minute)
		late := retryOf(c, token, nil)
		res, err := a.Serve(t.Context(), late, next)
		wantToolError(t, res, err, "Not run", "expired")
		if next.count() != 0 || late.Outcome != "timeout" {
			t.Errorf("forwarded %d times, outcome %q", next.count(), late.Outcome)
		}
	})
}

// TestApproveRoundRefused: the user's refusal to open the page ends the
// call.
func TestApproveRoundRefused(t *testing.T) {
	t.Parallel()
	for _, action := range []string{"decline", "cancel"} {
		svc := approval.New(nil, nil)
		a := newApprove(t, svc)
		next := &upstreamNext{}
		c := deleteCall(t, &fakeConn{err: call.ErrRound}, urlCaps, `{}`)
		res, _ := a.Serve(t.Context(), c, next)
		_, token := inputRequired(t, res)
		retry := retryOf(c, token, mcp.InputResponseMap{approval.InputKey: &mcp.ElicitResult{Action: action}})
		res, err := a.Serve(t.Context(), retry, next)
		wantToolError(t, res, err, "Not run")
		if next.count() != 0 || retry.Outcome != action+"d" && retry.Outcome != action+"led" {
			t.Errorf("%s: forwarded %d times, outcome %q", action, next.count(), retry.Outcome)
		}
	}
}

// TestApproveWithinTheCall: a client that answers within the call is
// asked to open the page, held until the decision, told the elicitation
// is complete, and the call runs only if it was approved.
func TestApproveWithinTheCall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		answer  string
		decide  func(svc *approval.Service, id string) error
		runs    bool
		outcome string
	}{
		{"approved", "accept", func(svc *approval.Service, id string) error {
			_, err := svc.Approve(t.Context(), id, alice)
			return err
		}, true, ""},
		{"denied", "accept", func(svc *approval.Service, id string) error { _, err := svc.Deny(t.Context(), id, alice); return err }, false, "denied"},
		{"lapsed", "accept", nil, false, "timeout"},
		{"declined", "decline", nil, false, "declined"},
		{"cancelled", "cancel", nil, false, "cancelled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				svc := approval.New(nil, &approval.Options{TTL: time.Minute})
				a := newApprove(t, svc)
				next := &upstreamNext{}
				conn := &fakeConn{answer: &mcp.ElicitResult{Action: tc.answer}}
				c := deleteCall(t, conn, urlCaps, `{"path":"/tmp/a"}`)
				type result struct {
					res json.RawMessage
					err error
				}
				done := make(chan result, 1)
				go func() {
					res, err := a.Serve(t.Context(), c, next)
					done <- result{res, err}
				}()
				synctest.Wait()
				qs := conn.questions()
				if len(qs) != 1 || qs[0].Mode != "url" || qs[0].ElicitationID == "" || !strings.HasPrefix(qs[0].URL, pageURL+"/approvals/") {
					t.Fatalf("asked %+v, want one URL elicitation of the page", qs)
				}
				if next.count() != 0 {
					t.Fatal("forwarded before the decision")
				}
				if tc.decide != nil {
					if err := tc.decide(svc, qs[0].ElicitationID); err != nil {
						t.Fatal(err)
					}
				}
				got := <-done
				if tc.runs {
					if got.err != nil || next.count() != 1 || next.conf == nil || next.conf.By != "page" {
						t.Fatalf("Serve = %s, %v; forwarded %d times, confirmation %+v", got.res, got.err, next.count(), next.conf)
					}
				} else {
					wantToolError(t, got.res, got.err, "Not run")
					if next.count() != 0 || c.Outcome != tc.outcome {
						t.Errorf("forwarded %d times, outcome %q; want none, %q", next.count(), c.Outcome, tc.outcome)
					}
				}
				if tc.answer == "accept" && (len(conn.completed) != 1 || conn.completed[0] != qs[0].ElicitationID) {
					t.Errorf("completed %v, want the elicitation %s", conn.completed, qs[0].ElicitationID)
				}
			})
		})
	}
}
