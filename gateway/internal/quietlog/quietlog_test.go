package quietlog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestWarn(t *testing.T) {
	var buf bytes.Buffer
	l := Warn(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))).With("k", "v").WithGroup("g")
	l.Info("routine")
	l.Warn("kept", "a", 1)
	out := buf.String()
	if strings.Contains(out, "routine") || !strings.Contains(out, "kept") || !strings.Contains(out, "k=v") || !strings.Contains(out, "g.a=1") {
		t.Errorf("log = %q", out)
	}
}
