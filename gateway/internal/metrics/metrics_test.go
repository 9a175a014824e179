package metrics_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/preflightmcp/preflight/gateway/internal/metrics"
)

// TestBounded: label values outside the fixed sets are counted as
// "other", so a caller's mistake cannot grow the series; a nil *Metrics
// records nothing.
func TestBounded(t *testing.T) {
	t.Parallel()
	m := metrics.New(&metrics.Options{NoRuntime: true})
	for i := range 100 {
		m.Call(metrics.Call{Server: "s", Method: "x", Tool: "t", Effect: string(rune('a' + i%26)), Decision: "maybe", Outcome: "weird"})
		m.Retried("s", "strange")
		m.GaveUp("s", "whim")
		m.Confirmation("s", "perhaps", "someone")
		m.SignIn("s", "alice@example.com")
	}
	m.Redacted("s", "email", 3)
	m.Redacted("s", "email", 0)
	n, err := testutil.GatherAndCount(m.Gatherer())
	if err != nil {
		t.Fatal(err)
	}
	if n != 7 { // one each of calls, latency, retries, refusals, confirmations, redactions, sign-ins
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

// TestSignIn: sign-in events are counted by server and event, served in
// the text format; an unknown event (a principal passed by mistake) is
// "other".
func TestSignIn(t *testing.T) {
	t.Parallel()
	m := metrics.New(&metrics.Options{NoRuntime: true})
	for _, e := range []string{"connected", "connected", "refreshed", "refresh_failed", "refused", "not_connected", "alice"} {
		m.SignIn("github", e)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	var got []string
	for line := range strings.Lines(rec.Body.String()) {
		if strings.HasPrefix(line, "preflight_upstream_signin_events_total{") {
			got = append(got, strings.TrimSpace(line))
		}
	}
	want := []string{
		`preflight_upstream_signin_events_total{event="connected",server="github"} 2`,
		`preflight_upstream_signin_events_total{event="not_connected",server="github"} 1`,
		`preflight_upstream_signin_events_total{event="other",server="github"} 1`,
		`preflight_upstream_signin_events_total{event="refresh_failed",server="github"} 1`,
		`preflight_upstream_signin_events_total{event="refreshed",server="github"} 1`,
		`preflight_upstream_signin_events_total{event="refused",server="github"} 1`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("scraped:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
