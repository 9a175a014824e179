package state_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"slices"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/state"
)

// The benchmarks report the median and the 99th percentile of one
// operation beside Go's mean (docs/benchmarks.md):
//
//	go test -run '^$' -bench . -benchtime 20000x -count 5 ./gateway/state/

// latencies records each operation's duration.
type latencies []time.Duration

func (l *latencies) time(f func()) {
	start := time.Now()
	f()
	*l = append(*l, time.Since(start))
}

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	b.ReportMetric(float64(l[len(l)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(l[len(l)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// nonceOf makes a nonce of epoch without a round trip, as Issue does.
func nonceOf(epoch string) string {
	var r [16]byte
	_, _ = rand.Read(r[:])
	return epoch + "." + base64.RawURLEncoding.EncodeToString(r[:])
}

// BenchmarkNoncesUse: Use of a fresh nonce, the check on the answer of a
// confirmation (memory: a map and a heap under a lock; Redis: one
// EVALSHA: the epoch check and SET NX PX).
func BenchmarkNoncesUse(b *testing.B) {
	for _, d := range deployments() {
		b.Run(d.name, func(b *testing.B) {
			s := d.replicas(b, 1, nil)[0]
			ctx := context.Background()
			epoch, err := s.Nonces.Epoch(ctx)
			if err != nil {
				b.Fatal(err)
			}
			nonces := make([]string, b.N)
			for i := range nonces {
				nonces[i] = nonceOf(epoch)
			}
			l := make(latencies, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				l.time(func() {
					if first, err := s.Nonces.Use(ctx, nonces[i], 10*time.Minute); !first || err != nil {
						b.Fatal(first, err)
					}
				})
			}
			b.StopTimer()
			l.report(b)
		})
	}
}

// BenchmarkConfirmedCall: what the shared state adds to a call that needs
// a nonce, Issue when the gateway asks and Use when the answer comes.
func BenchmarkConfirmedCall(b *testing.B) {
	for _, d := range deployments() {
		b.Run(d.name, func(b *testing.B) {
			s := d.replicas(b, 1, nil)[0]
			ctx := context.Background()
			l := make(latencies, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				l.time(func() {
					n, err := s.Nonces.Issue(ctx)
					if err != nil {
						b.Fatal(err)
					}
					if first, err := s.Nonces.Use(ctx, n, 10*time.Minute); !first || err != nil {
						b.Fatal(first, err)
					}
				})
			}
			b.StopTimer()
			l.report(b)
		})
	}
}

// BenchmarkLimiterAllow: one rate-limit decision.
func BenchmarkLimiterAllow(b *testing.B) {
	for _, d := range deployments() {
		b.Run(d.name, func(b *testing.B) {
			s := d.replicas(b, 1, nil)[0]
			ctx := context.Background()
			limit := state.Limit{Rate: 1e6, Burst: 1 << 20}
			l := make(latencies, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				l.time(func() {
					if _, _, err := s.Limiter.Allow(ctx, "principal:alice", limit); err != nil {
						b.Fatal(err)
					}
				})
			}
			b.StopTimer()
			l.report(b)
		})
	}
}

// BenchmarkBusRoundTrip: a message published on one replica until a
// subscriber on another has it.
func BenchmarkBusRoundTrip(b *testing.B) {
	for _, d := range deployments() {
		b.Run(d.name, func(b *testing.B) {
			r := d.replicas(b, 2, nil)
			ctx := context.Background()
			msgs, cancel, err := r[0].Bus.Subscribe(ctx, "approval:bench")
			if err != nil {
				b.Fatal(err)
			}
			defer cancel()
			l := make(latencies, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				l.time(func() {
					if err := r[1].Bus.Publish(ctx, "approval:bench", []byte("approved")); err != nil {
						b.Fatal(err)
					}
					<-msgs
				})
			}
			b.StopTimer()
			l.report(b)
		})
	}
}
