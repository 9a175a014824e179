package stage_test

import (
	"context"
	"encoding/json"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/metrics"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
)

// TestMetricsConfirmations: the metrics stage counts a confirmation as
// asked in the request that asks it and as answered in the one that
// answers it, whether in-band (one request for a legacy client, two for a
// 2026-07-28 client's retry with its answers) or out of band; dry-run
// decisions ask nothing; and an unknown tool is counted under
// tool="unknown".
func TestMetricsConfirmations(t *testing.T) {
	m := metrics.New(&metrics.Options{NoRuntime: true})
	confirm := &call.Decision{Verdict: call.Confirm}
	calls := []struct {
		call    call.Call
		outcome string
	}{
		// A legacy client asked mid-call, who accepts.
		{call.Call{Decision: confirm, Confirmation: &call.Confirmation{By: "client"}}, "ok"},
		// A 2026-07-28 client: input_required, then the retry declines.
		{call.Call{Decision: confirm}, "input_required"},
		{call.Call{Decision: confirm, RequestState: "s"}, "declined"},
		// Out of band: pointed to the page, then the retry is approved.
		{call.Call{Decision: confirm}, "tool_error"},
		{call.Call{Decision: confirm, Confirmation: &call.Confirmation{By: "page", Approver: "alice"}}, "ok"},
		// Dry run: nothing asked.
		{call.Call{Decision: &call.Decision{Verdict: call.Confirm, DryRun: true}}, "ok"},
		// An unknown tool, never routed.
		{call.Call{Name: "made_up"}, ""},
	}
	for _, c := range calls {
		x := c.call
		x.Method = call.ToolsCall
		x.Client = &call.Client{}
		outcome := c.outcome
		h := chain(call.HandlerFunc(func(_ context.Context, c *call.Call) (json.RawMessage, error) {
			c.Outcome = outcome
			return json.RawMessage(`{"content":[]}`), nil
		}), &stage.Metrics{M: m})
		if _, err := h.Serve(context.Background(), &x); err != nil {
			t.Fatal(err)
		}
	}
	fams, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, mt := range f.GetMetric() {
			key := f.GetName()
			for _, l := range mt.GetLabel() {
				key += " " + l.GetName() + "=" + l.GetValue()
			}
			got[key] = counterOrCount(mt)
		}
	}
	want := map[string]float64{
		"preflight_confirmations_total by= result=asked server=unknown":                                                  3,
		"preflight_confirmations_total by=client result=approved server=unknown":                                         1,
		"preflight_confirmations_total by=page result=approved server=unknown":                                           1,
		"preflight_confirmations_total by= result=declined server=unknown":                                               1,
		"preflight_calls_total decision=confirm effect=unknown method=tools/call outcome=ok server=unknown tool=unknown": 3,
		"preflight_calls_total decision=none effect=unknown method=tools/call outcome=ok server=unknown tool=unknown":    1,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	n := 0
	for k := range got {
		if len(k) > len("preflight_confirmations_total") && k[:len("preflight_confirmations_total")] == "preflight_confirmations_total" {
			n++
		}
	}
	if n != 4 {
		t.Errorf("confirmation series: %v", got)
	}
}

func counterOrCount(m *dto.Metric) float64 {
	if m.Histogram != nil {
		return float64(m.GetHistogram().GetSampleCount())
	}
	return m.GetCounter().GetValue()
}

// BenchmarkMetricsStage measures the metrics stage alone: recording one
// resolved tools/call (effect, labels, counter and histogram).
//
//	cd gateway && go test -run '^$' -bench BenchmarkMetricsStage -benchmem ./pipeline/
func BenchmarkMetricsStage(b *testing.B) {
	m := metrics.New(&metrics.Options{NoRuntime: true})
	h := chain(call.HandlerFunc(func(_ context.Context, c *call.Call) (json.RawMessage, error) {
		c.Outcome = "ok"
		return nil, nil
	}), &stage.Metrics{M: m})
	res := &call.Resolution{Source: "upstream"}
	res.Annotations.ReadOnlyHint = true
	b.ReportAllocs()
	for b.Loop() {
		c := call.Call{Method: call.ToolsCall, Name: "t", Client: &call.Client{}, Resolution: res,
			Decision: &call.Decision{Verdict: call.Allow}}
		if _, err := h.Serve(context.Background(), &c); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMetricsFlows: a call that carries a flow is counted by the action
// the gateway took, dry-run apart; a call without one is not counted.
func TestMetricsFlows(t *testing.T) {
	m := metrics.New(&metrics.Options{NoRuntime: true})
	f := &call.Flow{From: "fs__read_text_file", Upstream: "fs", Reason: "r"}
	for _, x := range []call.Call{
		{Flow: f, Decision: &call.Decision{Verdict: call.Deny}},
		{Flow: f, Decision: &call.Decision{Verdict: call.Confirm}},
		{Flow: f, Decision: &call.Decision{Verdict: call.Confirm, DryRun: true}},
		{Decision: &call.Decision{Verdict: call.Allow}},
	} {
		x.Method, x.Client = call.ToolsCall, &call.Client{}
		h := chain(call.HandlerFunc(func(context.Context, *call.Call) (json.RawMessage, error) {
			return json.RawMessage(`{"content":[]}`), nil
		}), &stage.Metrics{M: m})
		if _, err := h.Serve(context.Background(), &x); err != nil {
			t.Fatal(err)
		}
	}
	fams, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, fam := range fams {
		if fam.GetName() != "preflight_flows_total" {
			continue
		}
		for _, mt := range fam.GetMetric() {
			key := ""
			for _, l := range mt.GetLabel() {
				key += l.GetName() + "=" + l.GetValue() + " "
			}
			got[key] = mt.GetCounter().GetValue()
		}
	}
	want := map[string]float64{"action=deny server=unknown ": 1, "action=confirm server=unknown ": 1, "action=dry-run server=unknown ": 1}
	if len(got) != len(want) {
		t.Errorf("flows: %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s= %v, want %v", k, got[k], v)
		}
	}
}
