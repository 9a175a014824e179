package stage_test

//lint:file-ignore SA1019 a sampling or roots answer stands for an answer that is not an elicitation.

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
	"github.com/preflightmcp/preflight/gateway/internal/state"
	"github.com/preflightmcp/preflight/requeststate"
)

// newAsk returns the ask stage with its own ring and nonces.
func newAsk(t testing.TB, o stage.Ask) *stage.Ask {
	t.Helper()
	ring, err := requeststate.NewRandomRing(nil)
	if err != nil {
		t.Fatal(err)
	}
	st := state.NewMemory(nil)
	t.Cleanup(func() { st.Close() })
	o.Ring, o.Nonces = ring, st.Nonces
	return stage.NewAsk(o)
}

// TestAskPassesCallsItNeedNotAsk: calls without a Confirm decision, dry
// runs and confirmed calls go on without a question.
func TestAskPassesCallsItNeedNotAsk(t *testing.T) {
	t.Parallel()
	confirmed := &call.Confirmation{By: "page"}
	for _, tc := range []struct {
		name     string
		decision *call.Decision
		conf     *call.Confirmation
	}{
		{"no decision", nil, nil},
		{"allow", &call.Decision{Verdict: call.Allow}, nil},
		{"deny", &call.Decision{Verdict: call.Deny}, nil},
		{"dry run", &call.Decision{Verdict: call.Confirm, DryRun: true}, nil},
		{"confirmed", &call.Decision{Verdict: call.Confirm}, confirmed},
	} {
		conn := &fakeConn{answer: accept(true)}
		c := deleteCall(t, conn, formCaps, `{"path":"/tmp/a"}`)
		c.Decision, c.Confirmation = tc.decision, tc.conf
		next := &upstreamNext{}
		if _, err := newAsk(t, stage.Ask{}).Serve(t.Context(), c, next); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if next.count() != 1 || len(conn.questions()) != 0 || next.conf != tc.conf {
			t.Errorf("%s: forwarded %d times, asked %d times, confirmation %+v", tc.name, next.count(), len(conn.questions()), next.conf)
		}
	}
}

// TestAskWithinTheCall: a client that answers within the call is shown the
// call, and only an accepted form with confirm checked runs it.
func TestAskWithinTheCall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		answer  mcp.InputResponse
		runs    bool
		outcome string
		says    string
	}{
		{"accept", accept(true), true, "", ""},
		{"accept unchecked", accept(false), false, "declined", "declined"},
		{"decline", &mcp.ElicitResult{Action: "decline"}, false, "declined", "declined"},
		{"cancel", &mcp.ElicitResult{Action: "cancel"}, false, "cancelled", "cancelled"},
		{"not an elicitation", &mcp.ListRootsResult{}, false, "declined", "declined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			conn := &fakeConn{answer: tc.answer}
			c := deleteCall(t, conn, formCaps, `{"path":"/tmp/a","token":"s3cret-value"}`)
			next := &upstreamNext{}
			res, err := newAsk(t, stage.Ask{}).Serve(t.Context(), c, next)
			qs := conn.questions()
			if len(qs) != 1 || qs[0].Mode != "form" {
				t.Fatalf("asked %+v, want one form", qs)
			}
			for _, want := range []string{"Server: files", "Tool: files__delete", "it deletes files", "path: /tmp/a", "token: [withheld]"} {
				if !strings.Contains(qs[0].Message, want) {
					t.Errorf("question %q does not show %q", qs[0].Message, want)
				}
			}
			if strings.Contains(qs[0].Message, "s3cret-value") {
				t.Errorf("question %q shows a credential", qs[0].Message)
			}
			if !tc.runs {
				wantToolError(t, res, err, "not run", tc.says, "upstream was not contacted")
				if next.count() != 0 || c.Outcome != tc.outcome {
					t.Errorf("forwarded %d times, outcome %q; want none, %q", next.count(), c.Outcome, tc.outcome)
				}
				return
			}
			if err != nil || next.count() != 1 {
				t.Fatalf("Serve = %s, %v; forwarded %d times", res, err, next.count())
			}
			if next.conf == nil || next.conf.By != "client" || next.conf.Approver != "alice" || next.conf.RequestID == "" {
				t.Errorf("confirmation %+v, want by the client alice", next.conf)
			}
		})
	}
}

// TestAskCannotAsk: a client that cannot be asked, and a decision that
// wants a person out of band, pass on unconfirmed; the confirmed guard
// then refuses the call with a message that says what to do.
func TestAskCannotAsk(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		caps      *mcp.ClientCapabilities
		err       error
		outOfBand bool
		asked     bool
		says      string
	}{
		{"no capabilities", nil, nil, false, false, "declares form elicitation"},
		{"URL elicitation only", urlCaps, nil, false, false, "declares form elicitation"},
		{"cannot ask", formCaps, call.ErrCannotAsk, false, true, "declares form elicitation"},
		{"ask failed", formCaps, errors.New("broken pipe"), false, true, "declares form elicitation"},
		{"out of band", formCaps, nil, true, false, "out of band"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			conn := &fakeConn{answer: accept(true), err: tc.err}
			c := deleteCall(t, conn, tc.caps, `{"path":"/tmp/a"}`)
			c.Decision.OutOfBand = tc.outOfBand
			next := &upstreamNext{}
			h := chain(next, newAsk(t, stage.Ask{}), &stage.Confirmed{})
			res, err := h.Serve(t.Context(), c)
			if got := len(conn.questions()) == 1; got != tc.asked {
				t.Errorf("asked: %v, want %v", got, tc.asked)
			}
			wantToolError(t, res, err, "was not run", tc.says)
			if next.count() != 0 || c.Confirmation != nil || c.Outcome != "denied" {
				t.Errorf("forwarded %d times, confirmation %+v, outcome %q", next.count(), c.Confirmation, c.Outcome)
			}
		})
	}
}

// TestAskTimeout: a client that does not answer within Wait is not waited
// for longer, and the call is not run.
func TestAskTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		conn := &fakeConn{block: true}
		c := deleteCall(t, conn, formCaps, `{}`)
		next := &upstreamNext{}
		start := time.Now()
		res, err := newAsk(t, stage.Ask{Wait: time.Minute}).Serve(t.Context(), c, next)
		wantToolError(t, res, err, "not confirmed within 1m0s")
		if waited := time.Since(start); waited != time.Minute || next.count() != 0 || c.Outcome != "timeout" {
			t.Errorf("waited %v, forwarded %d times, outcome %q", waited, next.count(), c.Outcome)
		}
	})
}

// TestAskInRounds: a client that answers in a later round gets the
// question with a requestState; the retry that accepts runs the call once,
// and the state cannot be replayed nor used for other arguments.
func TestAskInRounds(t *testing.T) {
	t.Parallel()
	conn := &fakeConn{err: call.ErrRound}
	ask := newAsk(t, stage.Ask{})
	first := deleteCall(t, conn, formCaps, `{"path":"/tmp/a"}`)
	next := &upstreamNext{}
	res, err := ask.Serve(t.Context(), first, next)
	if err != nil {
		t.Fatal(err)
	}
	qs, token := inputRequired(t, res)
	var q struct {
		Method string           `json:"method"`
		Params mcp.ElicitParams `json:"params"`
	}
	if err := json.Unmarshal(qs[stage.ConfirmKey], &q); err != nil || q.Method != "elicitation/create" || q.Params.Mode != "form" {
		t.Fatalf("question %s (%v), want a form elicitation under %s", qs[stage.ConfirmKey], err, stage.ConfirmKey)
	}
	if next.count() != 0 || first.Outcome != "input_required" {
		t.Fatalf("forwarded %d times before the answer; outcome %q", next.count(), first.Outcome)
	}

	other := retryOf(first, token, mcp.InputResponseMap{stage.ConfirmKey: accept(true)})
	other.Arguments = json.RawMessage(`{"path":"/etc"}`)
	_, err = ask.Serve(t.Context(), other, next)
	wantWireError(t, err, requeststate.WireCode)

	missing := retryOf(first, token, nil)
	_, err = ask.Serve(t.Context(), missing, next)
	wantWireError(t, err, jsonrpc.CodeInvalidParams)

	retry := retryOf(first, token, mcp.InputResponseMap{stage.ConfirmKey: accept(true), "upstream/q": &mcp.ElicitResult{Action: "accept"}})
	if _, err := ask.Serve(t.Context(), retry, next); err != nil {
		t.Fatal(err)
	}
	if next.count() != 1 || next.conf == nil || next.conf.By != "client" || next.state != "" {
		t.Fatalf("forwarded %d times, confirmation %+v, state %q; want once, by the client, the state consumed", next.count(), next.conf, next.state)
	}
	if _, ok := retry.InputResponses[stage.ConfirmKey]; ok || len(retry.InputResponses) != 1 {
		t.Errorf("answers passed on %v, want the upstream's only", retry.InputResponses)
	}

	replay := retryOf(first, token, mcp.InputResponseMap{stage.ConfirmKey: accept(true)})
	_, err = ask.Serve(t.Context(), replay, next)
	wantWireError(t, err, requeststate.WireCode)
	if next.count() != 1 {
		t.Errorf("a replayed confirmation ran the call again (%d times)", next.count())
	}
}

// TestAskRoundDeclined: a declined retry ends the call, and its state
// stays unused.
func TestAskRoundDeclined(t *testing.T) {
	t.Parallel()
	ask := newAsk(t, stage.Ask{})
	first := deleteCall(t, &fakeConn{err: call.ErrRound}, formCaps, `{}`)
	next := &upstreamNext{}
	res, _ := ask.Serve(t.Context(), first, next)
	_, token := inputRequired(t, res)
	declined := retryOf(first, token, mcp.InputResponseMap{stage.ConfirmKey: &mcp.ElicitResult{Action: "decline"}})
	res, err := ask.Serve(t.Context(), declined, next)
	wantToolError(t, res, err, "declined")
	if next.count() != 0 || declined.Outcome != "declined" {
		t.Errorf("forwarded %d times, outcome %q", next.count(), declined.Outcome)
	}
}

// TestAskRoundExpired: a confirmation answered after its TTL does not run
// the call.
func TestAskRoundExpired(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ask := newAsk(t, stage.Ask{TTL: time.Minute})
		first := deleteCall(t, &fakeConn{err: call.ErrRound}, formCaps, `{}`)
		next := &upstreamNext{}
		res, _ := ask.Serve(t.Context(), first, next)
		_, token := inputRequired(t, res)
		time.Sleep(time.Minute + time.Second)
		late := retryOf(first, token, mcp.InputResponseMap{stage.ConfirmKey: accept(true)})
		res, err := ask.Serve(t.Context(), late, next)
		wantToolError(t, res, err, "expired", "call the tool again")
		if next.count() != 0 || late.Outcome != "timeout" {
			t.Errorf("forwarded %d times, outcome %q", next.count(), late.Outcome)
		}
	})
}

// TestAskForeignState: state sealed for another audience (the
// forwarder's) passes on unconfirmed when there is no Resumer, for the
// guard to refuse; a forged state is refused with the requestState error.
func TestAskForeignState(t *testing.T) {
	t.Parallel()
	ring, err := requeststate.NewRandomRing(nil)
	if err != nil {
		t.Fatal(err)
	}
	st := state.NewMemory(nil)
	defer st.Close()
	ask := stage.NewAsk(stage.Ask{Ring: ring, Nonces: st.Nonces})
	c := deleteCall(t, &fakeConn{}, formCaps, `{"path":"/tmp/a"}`)
	digest, _ := requeststate.ArgumentsDigest(c.Arguments)
	token, err := ring.Seal(requeststate.Binding{Method: call.ToolsCall, Target: c.Name, Audience: "preflight-gateway", Principal: "alice", Arguments: digest}, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	next := &upstreamNext{}
	h := chain(next, ask, &stage.Confirmed{})
	res, err := h.Serve(t.Context(), retryOf(c, token, nil))
	wantToolError(t, res, err, "was not run")
	if next.count() != 0 {
		t.Error("a call confirmed by nobody was forwarded")
	}

	_, err = ask.Serve(t.Context(), retryOf(c, "not-a-token", nil), next)
	wantWireError(t, err, requeststate.WireCode)
	if next.count() != 0 {
		t.Error("a call with a forged state was forwarded")
	}
}

// resumer is a forwarder that opens its own requestState as told.
type resumer struct {
	conf  *call.Confirmation
	nonce string
	err   error
}

func (r *resumer) Resumed(*call.Call) (*call.Confirmation, string, error) {
	return r.conf, r.nonce, r.err
}

// TestAskResumed: a retry that carries the forwarder's state (its upstream
// asked questions after the call was confirmed) is confirmed by what that
// state recorded, once per round; state from before the call needed
// confirmation is asked about now; state the forwarder refuses is refused.
func TestAskResumed(t *testing.T) {
	t.Parallel()
	ring, err := requeststate.NewRandomRing(nil)
	if err != nil {
		t.Fatal(err)
	}
	st := state.NewMemory(nil)
	defer st.Close()
	byClient := &call.Confirmation{By: "client", Approver: "alice", RequestID: "r1"}
	for _, tc := range []struct {
		name      string
		r         *resumer
		outOfBand bool
		runs      bool
		asks      bool
		code      int64
	}{
		{"confirmed before the questions", &resumer{conf: byClient}, false, true, false, 0},
		{"not confirmed before", &resumer{}, false, false, true, 0},
		{"in band for out of band", &resumer{conf: byClient}, true, false, false, 0},
		{"another stage's state", &resumer{err: &requeststate.Error{Reason: requeststate.ReasonAudience}}, false, false, false, 0},
		{"refused by the forwarder", &resumer{err: &requeststate.Error{Reason: requeststate.ReasonExpired}}, false, false, false, requeststate.WireCode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nonce, err := st.Nonces.Issue(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if tc.r.conf != nil {
				tc.r.nonce = nonce
			}
			ask := stage.NewAsk(stage.Ask{Ring: ring, Nonces: st.Nonces, Resumer: tc.r})
			c := deleteCall(t, &fakeConn{err: call.ErrRound}, formCaps, `{}`)
			c.Decision.OutOfBand = tc.outOfBand
			digest, _ := requeststate.ArgumentsDigest(nil)
			token, err := ring.Seal(requeststate.Binding{Method: call.ToolsCall, Target: c.Name, Audience: "preflight-gateway", Principal: "alice", Arguments: digest}, []byte("x"))
			if err != nil {
				t.Fatal(err)
			}
			next := &upstreamNext{}
			h := chain(next, ask, &stage.Confirmed{})
			rc := retryOf(c, token, nil)
			res, err := h.Serve(t.Context(), rc)
			switch {
			case tc.code != 0:
				wantWireError(t, err, tc.code)
			case tc.runs:
				if err != nil || next.count() != 1 || next.conf != byClient {
					t.Fatalf("forwarded %d times, confirmation %+v, %v", next.count(), next.conf, err)
				}
				// The same round again: refused, not run twice.
				_, err := h.Serve(t.Context(), retryOf(c, token, nil))
				wantWireError(t, err, requeststate.WireCode)
			case tc.asks:
				qs, _ := inputRequired(t, res)
				if _, ok := qs[stage.ConfirmKey]; !ok || next.count() != 0 {
					t.Errorf("questions %v, forwarded %d times; want the confirmation asked", qs, next.count())
				}
			default:
				wantToolError(t, res, err, "was not run")
			}
			if !tc.runs && (next.count() != 0 || rc.Confirmation != nil) {
				t.Errorf("forwarded %d times, confirmation %+v", next.count(), rc.Confirmation)
			}
		})
	}
}
