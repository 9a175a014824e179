package tokens

import (
	"testing"

	"github.com/preflightmcp/preflight/disclose"
)

// BenchmarkMeasureLivemcptool measures the 527-tool catalog as the
// command does: today's listing, the minimal listing and every fetched
// description, each encoded to JSON and counted (1,581 strings).
func BenchmarkMeasureLivemcptool(b *testing.B) {
	c := counter(b)
	ts := derived(readShared(b, "livemcptool.json"), disclose.SchemaOpen)
	b.ResetTimer()
	var r *Report
	for b.Loop() {
		var err error
		if r, err = Measure(c, ts, []int{1, 3, 5}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(r.Today+r.Minimal), "tokens-listed")
	b.ReportMetric(float64(len(ts)), "tools")
}

// BenchmarkCountLivemcptool counts the 527-tool catalog's listing of
// today only: one JSON encoding and one count per tool.
func BenchmarkCountLivemcptool(b *testing.B) {
	c := counter(b)
	tools := readShared(b, "livemcptool.json")
	b.ResetTimer()
	n := 0
	for b.Loop() {
		n = 0
		for _, t := range tools {
			j, err := Visible(t)
			if err != nil {
				b.Fatal(err)
			}
			n += c.Count(string(j))
		}
	}
	b.ReportMetric(float64(n), "tokens")
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}
