package metrics_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/preflightmcp/preflight/gateway/internal/metrics"
)

// TestBounded: label values outside the fixed sets are counted as
// "other", so a caller's mistake cannot grow the series; a nil *Metrics
// records nothing.
func TestBounded(t *testing.T) {
	m := metrics.New(&metrics.Options{NoRuntime: true})
	for i := range 100 {
		m.Call(metrics.Call{Server: "s", Method: "x", Tool: "t", Effect: string(rune('a' + i%26)), Decision: "maybe", Outcome: "weird"})
		m.Retried("s", "strange")
		m.GaveUp("s", "whim")
		m.Confirmation("s", "perhaps", "someone")
	}
	m.Redacted("s", "email", 3)
	m.Redacted("s", "email", 0)
	n, err := testutil.GatherAndCount(m.Gatherer())
	if err != nil {
		t.Fatal(err)
	}
	if n != 6 { // one each of calls, latency, retries, refusals, confirmations, redactions
		t.Errorf("%d series", n)
	}
	fams, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				switch l.GetName() {
				case "server", "tool", "kind":
				default:
					if l.GetValue() != "other" {
						t.Errorf("%s %s=%q", f.GetName(), l.GetName(), l.GetValue())
					}
				}
			}
		}
	}
	var nilM *metrics.Metrics
	nilM.Call(metrics.Call{})
	nilM.Retried("s", "exited")
}
