package metrics_test

import (
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/preflightmcp/preflight/gateway/internal/metrics"
)

// A gateway records each call when it ends and serves the text format.
func Example() {
	m := metrics.New(&metrics.Options{NoRuntime: true})
	m.Call(metrics.Call{Server: "files", Method: "tools/call", Tool: "files__manage_files",
		Effect: "read", Decision: "allow", Outcome: "ok", Seconds: 0.002})
	m.Retried("files", "exited")
	m.GaveUp("files", "not_idempotent")

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(line, "preflight_calls_total") || strings.HasPrefix(line, "preflight_retries") {
			fmt.Println(line)
		}
	}
	// Output:
	// preflight_calls_total{decision="allow",effect="read",method="tools/call",outcome="ok",server="files",tool="files__manage_files"} 1
	// preflight_retries_refused_total{reason="not_idempotent",server="files"} 1
	// preflight_retries_total{failure="exited",server="files"} 1
}
