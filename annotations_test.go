package preflight_test

import (
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
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

func TestExceeds(t *testing.T) {
	ro := preflight.Annotations{ReadOnlyHint: true}
	additive := preflight.Annotations{}
	idem := preflight.Annotations{IdempotentHint: true}
	cases := []struct {
		name           string
		static, result preflight.Annotations
		want           []string
	}{
		{"read-only stays read-only", ro, preflight.Annotations{}, []string{"readOnlyHint"}},
		{"not destructive stays so", additive, preflight.Annotations{DestructiveHint: true}, []string{"destructiveHint"}},
		{"idempotent stays so", idem, preflight.Annotations{}, []string{"idempotentHint"}},
		{"read-only result of an idempotent tool", idem, ro, nil},
		{"closed world stays closed", additive, preflight.Annotations{OpenWorldHint: true}, []string{"openWorldHint"}},
		{"defaults bound everything", preflight.DefaultAnnotations, preflight.Annotations{DestructiveHint: true, OpenWorldHint: true}, nil},
		{"safer is fine", preflight.DefaultAnnotations, ro, nil},
	}
	for _, c := range cases {
		if got := c.result.Exceeds(c.static); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
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
		if over := r.Exceeds(w); len(over) > 0 {
			t.Errorf("row %+v exceeds the worst case %+v: %v", r, w, over)
		}
	}
	if all := preflight.WorstCase(preflight.Annotations{ReadOnlyHint: true, IdempotentHint: true}); !all.ReadOnlyHint || all.DestructiveHint {
		t.Errorf("all read-only: %+v", all)
	}
}
