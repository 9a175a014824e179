package config

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

type delivery struct {
	c   *Config
	err error
}

// watch runs Watch on path until the test ends and returns what it
// delivers.
func watch(t *testing.T, path string, opts *WatchOptions) <-chan delivery {
	t.Helper()
	ch := make(chan delivery)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Watch(ctx, path, opts, func(c *Config, err error) {
			select {
			case ch <- delivery{c, err}:
			case <-ctx.Done():
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch: %v", err)
		}
	})
	return ch
}

// next returns the next delivery. The bound only keeps a broken watch
// from hanging the test.
func next(t *testing.T, ch <-chan delivery) delivery {
	t.Helper()
	select {
	case d := <-ch:
		return d
	case <-time.After(30 * time.Second):
		t.Fatal("nothing delivered")
		return delivery{}
	}
}

// nextCommand returns the command of server s in the next delivery,
// which must be a config.
func nextCommand(t *testing.T, ch <-chan delivery) string {
	t.Helper()
	d := next(t, ch)
	if d.err != nil {
		t.Fatalf("delivered an error: %v", d.err)
	}
	return d.c.Servers["s"].Command
}

// until waits for a config whose server s has the command want. A file
// written in place may be read half-written, so errors on the way are
// skipped; a config with another command is a failure unless ok says it
// is one of the versions written on the way.
func until(t *testing.T, ch <-chan delivery, want string, ok func(string) bool) {
	t.Helper()
	for {
		d := next(t, ch)
		if d.err != nil {
			continue
		}
		got := d.c.Servers["s"].Command
		if got == want {
			return
		}
		if ok == nil || !ok(got) {
			t.Fatalf("delivered %q while waiting for %q", got, want)
		}
	}
}

func config(command string) string {
	return "servers:\n  s:\n    command: " + command + "\n"
}

// TestWatch edits a real file the ways editors and tools do and checks
// what is delivered.
func TestWatch(t *testing.T) {
	// Not parallel: it waits on short timers (a health interval, a
	// debounce) that a loaded machine must not stretch.
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	writeFile(t, path, config("one"))
	ch := watch(t, path, &WatchOptions{Debounce: 20 * time.Millisecond})

	if got := nextCommand(t, ch); got != "one" {
		t.Fatalf("first config: %q", got)
	}

	// Written in place.
	writeFile(t, path, config("two"))
	until(t, ch, "two", nil)

	// A bad edit: its errors are delivered, without a config.
	writeFile(t, path, config("two")+"    tpye: http\n")
	for {
		d := next(t, ch)
		if d.c != nil {
			t.Fatalf("a config was delivered for a bad edit: %+v", d.c)
		}
		if strings.Contains(d.err.Error(), path+":4:5: servers.s.tpye: unknown key") {
			break
		}
	}

	// Fixed back to the config in force: nothing is delivered, so the
	// next config delivered is the replacement below.
	writeFile(t, path, config("two"))

	// Replaced by renaming another file over it, as many editors save.
	tmp := filepath.Join(dir, ".gateway.yaml.swp")
	writeFile(t, tmp, config("three"))
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	until(t, ch, "three", nil)

	// Many writes in a row: whatever is delivered on the way, the last
	// write is delivered in the end.
	for i := range 20 {
		writeFile(t, path, config("burst"+strings.Repeat("x", i)))
	}
	until(t, ch, "burst"+strings.Repeat("x", 19), func(got string) bool { return strings.HasPrefix(got, "burst") })

	// Deleted, then written again.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if d := next(t, ch); d.err == nil {
		t.Fatalf("after removal: %+v", d)
	}
	writeFile(t, path, config("four"))
	until(t, ch, "four", nil)
}

// TestWatchEnvFile checks that a change to an env file the config names
// reloads it.
func TestWatchEnvFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "secrets", "tools.env"), "TOKEN=a\n")
	path := filepath.Join(dir, "gateway.yaml")
	writeFile(t, path, "servers:\n  s:\n    command: x\n    envFile: secrets/tools.env\n")
	ch := watch(t, path, &WatchOptions{Debounce: time.Millisecond})
	if d := next(t, ch); d.err != nil || d.c.Servers["s"].Env["TOKEN"] != "a" {
		t.Fatalf("first: %+v", d)
	}
	writeFile(t, filepath.Join(dir, "secrets", "tools.env"), "TOKEN=b\n")
	for {
		if d := next(t, ch); d.err == nil {
			if got := d.c.Servers["s"].Env["TOKEN"]; got != "b" {
				t.Fatalf("after the env file changed: TOKEN=%q", got)
			}
			break
		}
	}
}

// TestWatchSymlinkSwap checks a mounted volume's update: the file is a
// link through ..data, and ..data is swapped to a new directory.
func TestWatchSymlinkSwap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "..v1", "gateway.yaml"), config("one"))
	writeFile(t, filepath.Join(dir, "..v2", "gateway.yaml"), config("two"))
	if err := os.Symlink("..v1", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "gateway.yaml")
	if err := os.Symlink(filepath.Join("..data", "gateway.yaml"), path); err != nil {
		t.Fatal(err)
	}
	ch := watch(t, path, &WatchOptions{Debounce: time.Millisecond})
	if got := nextCommand(t, ch); got != "one" {
		t.Fatalf("first: %q", got)
	}
	if err := os.Symlink("..v2", filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if got := nextCommand(t, ch); got != "two" {
		t.Fatalf("after the swap: %q", got)
	}
}

// TestWatchSIGHUP sends the process a real SIGHUP: the config is read
// again, with the environment as it is now.
func TestWatchSIGHUP(t *testing.T) {
	// Not parallel: it sets environment variables.
	t.Setenv("PREFLIGHT_CONFIG_TEST_COMMAND", "before")
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	path := filepath.Join(t.TempDir(), "gateway.yaml")
	writeFile(t, path, config("${PREFLIGHT_CONFIG_TEST_COMMAND}"))
	ch := watch(t, path, &WatchOptions{Reload: hup})
	if got := nextCommand(t, ch); got != "before" {
		t.Fatalf("first: %q", got)
	}
	t.Setenv("PREFLIGHT_CONFIG_TEST_COMMAND", "after")
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if got := nextCommand(t, ch); got != "after" {
		t.Fatalf("after SIGHUP: %q", got)
	}
}

// TestWatchFirstLoadFails checks that Watch returns the first load's
// errors without calling fn.
func TestWatchFirstLoadFails(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	writeFile(t, path, "servers: {}\n")
	err := Watch(context.Background(), path, nil, func(*Config, error) { t.Error("fn called") })
	if err == nil || !strings.Contains(err.Error(), "no servers") {
		t.Errorf("Watch = %v", err)
	}
}
