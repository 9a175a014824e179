package gateway

import (
	"os"
	"runtime/metrics"
)

// Runtime is what the health report says of the process: which one it is
// (replicas behind a load balancer are told apart by it) and figures that
// show growth under load.
type Runtime struct {
	// PID is the process's id.
	PID int `json:"pid"`
	// Goroutines counts the live goroutines.
	Goroutines uint64 `json:"goroutines"`
	// HeapLive is the heap in use after the last garbage collection, in
	// bytes.
	HeapLive uint64 `json:"heapLive"`
}

var runtimeSamples = []string{"/sched/goroutines:goroutines", "/gc/heap/live:bytes"}

// readRuntime reads the figures of Runtime (runtime/metrics, without
// stopping the world).
func readRuntime() Runtime {
	s := make([]metrics.Sample, len(runtimeSamples))
	for i, name := range runtimeSamples {
		s[i].Name = name
	}
	metrics.Read(s)
	r := Runtime{PID: os.Getpid()}
	if s[0].Value.Kind() == metrics.KindUint64 {
		r.Goroutines = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		r.HeapLive = s[1].Value.Uint64()
	}
	return r
}
