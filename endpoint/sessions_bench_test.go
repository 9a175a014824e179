package endpoint

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

// BenchmarkAbandonedSessions opens 3,000 legacy sessions with bare
// initialize POSTs over loopback HTTP and walks away from them, then
// reports what the process still holds: goroutines and live heap above the
// baseline, while the sessions are held and once their idle timeout has
// passed. "unbounded" is the handler without a timeout or a cap (how it
// was before they had defaults); "defaults" has the default cap and an
// idle timeout of seconds standing in for the default's minutes.
//
//	go test -run '^$' -bench AbandonedSessions -benchtime 1x ./endpoint/
func BenchmarkAbandonedSessions(b *testing.B) {
	const n = 3000
	for _, c := range []struct {
		name string
		opts Options
	}{
		{"unbounded", Options{SessionTimeout: -1, MaxSessions: -1}},
		// The overall cap: every session here is one (anonymous) user's.
		{"defaults", Options{SessionTimeout: 5 * time.Second, MaxSessionsPerUser: -1}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				server := newTestServer()
				h := NewHandler(server, &c.opts)
				hs := httptest.NewServer(h)
				g0, m0 := footprint()
				refused := 0
				for range n {
					req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(initializeBody))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					resp, err := hs.Client().Do(req)
					if err != nil {
						b.Fatal(err)
					}
					resp.Body.Close()
					if resp.StatusCode == http.StatusServiceUnavailable {
						refused++
					}
				}
				g1, m1 := footprint()
				b.ReportMetric(float64(h.Sessions()), "sessions-held")
				b.ReportMetric(float64(refused), "refused")
				b.ReportMetric(float64(g1-g0), "goroutines-held")
				b.ReportMetric(float64(m1-m0)/(1<<20), "MB-held")
				if c.opts.SessionTimeout > 0 {
					for h.Sessions() > 0 {
						time.Sleep(10 * time.Millisecond)
					}
					g2, m2 := footprint()
					b.ReportMetric(float64(g2-g0), "goroutines-after-timeout")
					b.ReportMetric(float64(m2-m0)/(1<<20), "MB-after-timeout")
				}
				for ss := range server.Sessions() {
					ss.Close()
				}
				hs.Close()
			}
		})
	}
}

// footprint returns the goroutines and the live heap after a collection.
func footprint() (int, int64) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return runtime.NumGoroutine(), int64(m.HeapAlloc)
}
