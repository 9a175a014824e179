//go:build unix

package foldertool_test

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/internal/wiretest"
)

// TestNamedPipeIsNotAFolder: a named pipe where a folder is expected is
// refused at once by every tool; a plain open of it would block for ever.
func TestNamedPipeIsNotAFolder(t *testing.T) {
	dir, hs := tree(t)
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	// Should a call block in open, opening the other end (after a
	// generous while, then again for each later call) releases it, so that
	// the test fails instead of hanging.
	stop := make(chan struct{})
	released := make(chan struct{})
	var blocked atomic.Bool
	defer func() {
		close(stop)
		<-released
		if blocked.Load() {
			t.Error("a call blocked opening the pipe")
		}
	}()
	go func() {
		defer close(released)
		wait := time.NewTimer(20 * time.Second)
		defer wait.Stop()
		for {
			select {
			case <-stop:
				return
			case <-wait.C:
				blocked.Store(true)
				if f, err := os.OpenFile(fifo, os.O_RDWR, 0); err == nil {
					f.Close()
				}
				wait.Reset(100 * time.Millisecond)
			}
		}
	}()
	p := wiretest.Stateless(hs.URL, askCaps)
	for _, tool := range rootTools {
		r := p.Call(t, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{"path": "pipe"}})
		if got := resultText(t, r); got != `resolver "`+firstResolver[tool]+`": pipe: not a folder` || r.Result["isError"] != true {
			t.Errorf("%s: %s", tool, r.Raw)
		}
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the pipe is gone or changed: %v %v", fi, err)
	}
}

var firstResolver = map[string]string{"delete_folder": "confirm_delete", "rename_folder": "new_name", "describe_folder": "summary"}
