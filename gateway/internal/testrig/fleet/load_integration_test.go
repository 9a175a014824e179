//go:build integration

package fleet_test

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/testrig/fleet"
)

// The long run (docs/benchmarks.md, "Fleet"):
//
//	cd gateway && go test ./internal/fleet -run TestLoad -v -load.duration 60s -load.clients 8,32 -load.compare
var (
	loadClients  = flag.String("load.clients", "4", "comma-separated numbers of concurrent clients (half of each era)")
	loadDuration = flag.Duration("load.duration", 3*time.Second, "duration of each load run")
	loadReplicas = flag.Int("load.replicas", 2, "replicas behind HAProxy")
	loadCompare  = flag.Bool("load.compare", false, "also run against one replica and report the ratio")
)

// TestLoad drives clients of both eras through HAProxy (reads, confirmed
// replaces and deletes answered in band, redacted reads of the example
// files server) and checks that no call failed, that each call done is in
// the shared audit log exactly once, and that no
// replica's goroutines or live heap grew between the end of the warm-up
// and the end of the run; it logs the throughput.
func TestLoad(t *testing.T) {
	var counts []int
	for _, s := range splitComma(*loadClients) {
		var n int
		if _, err := fmt.Sscan(s, &n); err != nil || n <= 0 {
			t.Fatalf("-load.clients %q", *loadClients)
		}
		counts = append(counts, n)
	}
	replicas := []int{*loadReplicas}
	if *loadCompare {
		replicas = append(replicas, 1)
	}
	rates := map[[2]int]float64{}
	for _, nr := range replicas {
		f := fleet.Start(t, &fleet.Options{Replicas: nr})
		for _, clients := range counts {
			ctx, cancel := context.WithTimeout(context.Background(), *loadDuration+2*time.Minute)
			// Records of this run only: the previous run on the same fleet
			// (other client counts) ended before this instant, and its calls
			// cut at the end started before it.
			since := time.Now()
			rep, err := f.Run(ctx, fleet.Load{Clients: clients, Duration: *loadDuration})
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			diffs, err := f.CheckAudit(ctx, since, rep.Done, rep.Cut)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			if len(diffs) > 0 {
				t.Errorf("%d replicas, %d clients: the audit log disagrees with the calls made (%d differences): %q", nr, clients, len(diffs), diffs[:min(len(diffs), 10)])
			}
			done := 0
			for _, n := range rep.Done {
				done += n
			}
			t.Logf("%d replicas, %d clients: %d calls done, each in the audit once (%d cut at the end)", nr, clients, done, rep.Cut)
			t.Logf("%d replicas, %d clients: %v", nr, clients, rep)
			rates[[2]int{nr, clients}] = rep.Rate()
			if rep.Calls == 0 || rep.Failed > 0 {
				t.Errorf("%d replicas, %d clients: %d calls, %d failed: %q", nr, clients, rep.Calls, rep.Failed, rep.Failures)
			}
			for name, early := range rep.Early {
				late := rep.Late[name]
				t.Logf("  %s: goroutines %d -> %d, live heap %.1f -> %.1f MB", name, early.Goroutines, late.Goroutines,
					float64(early.HeapLive)/1e6, float64(late.HeapLive)/1e6)
				if late.Goroutines > early.Goroutines+16 {
					t.Errorf("%s: goroutines grew from %d to %d", name, early.Goroutines, late.Goroutines)
				}
				if late.HeapLive > 2*early.HeapLive+16<<20 {
					t.Errorf("%s: live heap grew from %d to %d bytes", name, early.HeapLive, late.HeapLive)
				}
			}
		}
	}
	if *loadCompare {
		for _, clients := range counts {
			t.Logf("%d clients: %d replicas / 1 replica = %.2f", clients, *loadReplicas, rates[[2]int{*loadReplicas, clients}]/rates[[2]int{1, clients}])
		}
	}
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}
