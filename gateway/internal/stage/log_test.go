package stage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
)

// resolvedCall is a decided tools/call with its resolution, as the log
// stage sees it after the other stages.
func resolvedCall() *call.Call {
	c := &call.Call{Method: call.ToolsCall, Name: "delete_file", Client: &call.Client{Version: "2026-07-28"},
		Resolution:   &call.Resolution{Source: "upstream"},
		Decision:     &call.Decision{Verdict: call.Confirm, Reason: "deletes are confirmed", Rule: "deletes", DryRun: true, OutOfBand: true},
		Confirmation: &call.Confirmation{By: "page"}}
	c.Resolution.Annotations.DestructiveHint = true
	return c
}

// TestLogGroups: the resolution and the decision are groups of the call's
// record, with every field the call has.
func TestLogGroups(t *testing.T) {
	var buf bytes.Buffer
	h := chain(call.HandlerFunc(func(context.Context, *call.Call) (json.RawMessage, error) { return nil, nil }),
		&stage.Log{Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	h.Serve(t.Context(), resolvedCall())
	for _, want := range []string{
		`"resolution":{"source":"upstream","readOnly":false,"destructive":true}`,
		`"decision":{"verdict":"confirm","reason":"deletes are confirmed","rule":"deletes","dryRun":true,"outOfBand":true,"confirmedBy":"page"}`,
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("record %s\nwant %s", buf.String(), want)
		}
	}
}

// BenchmarkLog: what writing a decided call's record costs, as JSON.
func BenchmarkLog(b *testing.B) {
	h := chain(call.HandlerFunc(func(context.Context, *call.Call) (json.RawMessage, error) { return nil, nil }),
		&stage.Log{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	c := resolvedCall()
	b.ReportAllocs()
	for b.Loop() {
		h.Serve(b.Context(), c)
	}
}
