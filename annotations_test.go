package preflight_test

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/hints"
)

func TestAnnotationsOfDefaults(t *testing.T) {
	if got := preflight.AnnotationsOf(nil); got != preflight.DefaultAnnotations {
		t.Errorf("nil: %+v", got)
	}
	f := false
	got := preflight.AnnotationsOf(&mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &f})
	want := preflight.Annotations{ReadOnlyHint: true, DestructiveHint: true, OpenWorldHint: false}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if back := preflight.AnnotationsOf(want.ToolAnnotations("t")); back != want {
		t.Errorf("ToolAnnotations round trip: %+v", back)
	}
}

func TestWorstCaseBoundsEveryRow(t *testing.T) {
	rows := []preflight.Annotations{
		{ReadOnlyHint: true, IdempotentHint: true},
		{},
		{DestructiveHint: true, IdempotentHint: true},
	}
	w := preflight.WorstCase(rows...)
	want := preflight.Annotations{DestructiveHint: true}
	if w != want {
		t.Errorf("WorstCase = %+v, want %+v", w, want)
	}
	for _, r := range rows {
		if over := hints.Exceeds(hints.Declaration{Annotations: w}, hints.Declaration{Annotations: r}); len(over) > 0 {
			t.Errorf("row %+v exceeds the worst case %+v: %v", r, w, over)
		}
	}
	if all := preflight.WorstCase(preflight.Annotations{ReadOnlyHint: true, IdempotentHint: true}); !all.ReadOnlyHint || all.DestructiveHint {
		t.Errorf("all read-only: %+v", all)
	}
}
