package gateway_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/internal/setup"
)

// TestOptionsFromConfigTracing: tracing is off without the section (no
// provider: the chain is compiled untraced), and on with it, its
// provider shut down by the options' Close.
func TestOptionsFromConfigTracing(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		yaml string
		on   bool
	}{
		{yaml: "servers:\n  a: {command: x}\npins: {path: pins.db}\naudit: {store: \"off\"}\n"},
		{yaml: "servers:\n  a: {command: x}\npins: {path: pins.db}\naudit: {store: \"off\"}\ntracing: {enabled: false, endpoint: \"http://127.0.0.1:1\"}\n"},
		{yaml: "servers:\n  a: {command: x}\npins: {path: pins.db}\naudit: {store: \"off\"}\ntracing: {enabled: true, endpoint: \"http://127.0.0.1:1\", sampleRatio: 0.5}\n", on: true},
	} {
		cfg, err := config.Parse(filepath.Join(dir, "gateway.yaml"), []byte(tc.yaml), noEnv)
		if err != nil {
			t.Fatal(err)
		}
		opts, err := setup.Options(context.Background(), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := opts.TracerProvider != nil; got != tc.on {
			t.Errorf("%q: tracing on = %v, want %v", tc.yaml, got, tc.on)
		}
		if err := opts.Close(); err != nil {
			t.Errorf("%q: Close: %v", tc.yaml, err)
		}
		if tc.on {
			// A provider shut down records nothing.
			if _, span := opts.TracerProvider.Tracer("test").Start(context.Background(), "after"); span.IsRecording() {
				t.Errorf("%q: the provider was not shut down by Close", tc.yaml)
			}
		}
	}
}
