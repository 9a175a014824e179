//go:build integration

package podmantest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// TestLoad loads the image of HEAD into Podman and checks what Podman
// reads from it: the non-root user, /data, the entrypoint.
func TestLoad(t *testing.T) {
	p := New(t)
	archive := Image(t)
	start := time.Now()
	img := p.Load(archive)
	t.Logf("podman load %s: %v", img, time.Since(start).Round(time.Millisecond))
	out, err := p.Run("image", "inspect", "--format", "{{json .Config}}", img)
	if err != nil {
		t.Fatal(err)
	}
	var config struct {
		User       string
		WorkingDir string
		Entrypoint []string
	}
	if err := json.Unmarshal([]byte(out), &config); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if config.User != imageUser+":"+imageUser {
		t.Errorf("user %q, want %s:%s", config.User, imageUser, imageUser)
	}
	if config.WorkingDir != "/data" {
		t.Errorf("working directory %q, want /data", config.WorkingDir)
	}
	if !slices.Equal(config.Entrypoint, []string{"/usr/local/bin/preflight"}) {
		t.Errorf("entrypoint %q, want /usr/local/bin/preflight", config.Entrypoint)
	}
}
