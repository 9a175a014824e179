package redact

import (
	"syscall"
	"time"
)

// threadCPU is the CPU time the calling OS thread has used (Linux's
// RUSAGE_THREAD), which, unlike the wall clock, does not grow while other
// work on the machine holds the CPU.
func threadCPU() (time.Duration, bool) {
	const rusageThread = 1
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
