package cli

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

func TestPprofLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", ":0", "example.com:0", "no-port"} {
		_, err := servePprof(addr, slog.New(slog.DiscardHandler))
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("-pprof %s: %v, want a usage error", addr, err)
		}
	}
}

func TestPprofServes(t *testing.T) {
	var logged strings.Builder
	stop, err := servePprof("127.0.0.1:0", slog.New(slog.NewTextHandler(&logged, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	_, url, ok := strings.Cut(logged.String(), "url=")
	if !ok {
		t.Fatalf("no URL logged: %s", logged.String())
	}
	resp, err := http.Get(strings.TrimSpace(url) + "goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine profile:") {
		t.Fatalf("%d %.200s", resp.StatusCode, body)
	}
}
