//go:build !linux

package redact

import "time"

func threadCPU() (time.Duration, bool) { return 0, false }
