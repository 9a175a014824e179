package config

import (
	"path/filepath"
	"runtime"
	"testing"
)

// TestPins reads the pins section: a relative SQLite path is the config
// file's, a PostgreSQL URL may come from the environment, and a file
// without the section keeps its pins in the default SQLite file.
func TestPins(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text string
		want       Pins
		spec       string
	}{
		{"relative path", "servers:\n  a:\n    command: x\npins:\n  path: state/pins.db\n",
			Pins{Store: PinStoreSQLite, Path: "/etc/preflight/state/pins.db"}, "sqlite:/etc/preflight/state/pins.db"},
		{"absolute path", "servers:\n  a:\n    command: x\npins:\n  store: sqlite\n  path: /var/lib/preflight/pins.db\n",
			Pins{Store: PinStoreSQLite, Path: "/var/lib/preflight/pins.db"}, "sqlite:/var/lib/preflight/pins.db"},
		{"postgres", "servers:\n  a:\n    command: x\npins:\n  store: postgres\n  url: ${DATABASE_URL}\n",
			Pins{Store: PinStorePostgres, URL: "postgresql://localhost/shop"}, "postgresql://localhost/shop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := mustParse(t, "/etc/preflight/gateway.yaml", tc.text)
			if c.Pins != tc.want {
				t.Errorf("pins = %+v, want %+v", c.Pins, tc.want)
			}
			if spec, err := c.Pins.Spec(); err != nil || spec != tc.spec {
				t.Errorf("Spec() = %q, %v; want %q", spec, err, tc.spec)
			}
		})
	}
}

// TestPinsDefault: without a pins section, the pins are in pins.db in the
// user's state directory, never in a cache.
func TestPinsDefault(t *testing.T) {
	// Not parallel: it sets environment variables.
	c := mustParse(t, "/etc/preflight/gateway.yaml", "servers:\n  a:\n    command: x\n")
	if c.Pins != (Pins{Store: PinStoreSQLite}) {
		t.Fatalf("pins = %+v", c.Pins)
	}
	if runtime.GOOS == "windows" || runtime.GOOS == "darwin" {
		// The XDG layout below is that of Linux and the BSDs.
		if spec, err := c.Pins.Spec(); err != nil || filepath.Base(filepath.Dir(spec)) != "preflight" || filepath.Base(spec) != DefaultPinsFile {
			t.Errorf("Spec() = %q, %v", spec, err)
		}
		return
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", "")
	if spec, err := c.Pins.Spec(); err != nil || spec != "sqlite:"+filepath.Join(home, ".local", "state", "preflight", "pins.db") {
		t.Errorf("Spec() = %q, %v", spec, err)
	}
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	if spec, err := c.Pins.Spec(); err != nil || spec != "sqlite:"+filepath.Join(state, "preflight", "pins.db") {
		t.Errorf("with XDG_STATE_HOME: Spec() = %q, %v", spec, err)
	}
	// A relative XDG_STATE_HOME is invalid by the XDG spec, and ignored.
	t.Setenv("XDG_STATE_HOME", "relative")
	if spec, err := c.Pins.Spec(); err != nil || spec != "sqlite:"+filepath.Join(home, ".local", "state", "preflight", "pins.db") {
		t.Errorf("with a relative XDG_STATE_HOME: Spec() = %q, %v", spec, err)
	}
}
