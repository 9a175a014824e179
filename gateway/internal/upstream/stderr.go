package upstream

import (
	"sync"

	"github.com/preflightmcp/preflight/gateway/internal/text"
)

// Bounds of the stderr tail a Conn keeps (Health.Stderr).
const (
	maxStderrTailLines = 3
	maxStderrTailBytes = 300 // in all
)

// stderrTail keeps the last lines a stdio server wrote to stderr, over
// its restarts, within the bounds above.
type stderrTail struct {
	mu    sync.Mutex
	lines []string
}

// add appends line, sanitised already.
func (t *stderrTail) add(line string) {
	line = text.Clip(line, maxStderrTailBytes-len(text.Ellipsis))
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	n := 0
	for i := len(t.lines) - 1; i >= 0; i-- {
		n += len(t.lines[i])
		if n > maxStderrTailBytes || len(t.lines)-i > maxStderrTailLines {
			t.lines = append(t.lines[:0], t.lines[i+1:]...)
			break
		}
	}
}

// get returns a copy of the tail, oldest line first; nil when empty.
func (t *stderrTail) get() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == 0 {
		return nil
	}
	return append([]string(nil), t.lines...)
}
