package hints_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/hints"
)

func TestReadStrict(t *testing.T) {
	h, err := hints.Read(map[string]any{
		preflight.MetaEffect:               "delete",
		preflight.MetaIdempotent:           "yes",
		preflight.MetaRequiresConfirmation: true,
		preflight.MetaResultSensitivity:    "secret",
		"other/key":                        1,
	})
	var herr *hints.Error
	if !errors.As(err, &herr) {
		t.Fatalf("err = %v, want *hints.Error", err)
	}
	for _, want := range []string{
		`mcp.dev/idempotent: invalid value "yes" (allowed: true, false)`,
		`mcp.dev/resultSensitivity: invalid value "secret" (allowed: public, internal, confidential, restricted)`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if h.Effect != hints.EffectDelete || h.RequiresConfirmation == nil || !*h.RequiresConfirmation || h.Idempotent != nil || h.ResultSensitivity != "" {
		t.Errorf("valid hints not kept, invalid ones not dropped: %+v", h)
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	in := hints.Hints{Effect: hints.EffectExternal, Idempotent: hints.Bool(false), RequiresConfirmation: hints.Bool(true), ResultSensitivity: hints.SensitivityConfidential}
	base := map[string]any{"keep": "me"}
	meta := in.Write(base)
	if len(base) != 1 {
		t.Errorf("Write modified its argument: %v", base)
	}
	if meta["keep"] != "me" {
		t.Errorf("Write dropped other keys: %v", meta)
	}
	out, err := hints.Read(meta)
	if err != nil || !reflect.DeepEqual(in, out) {
		t.Errorf("round trip: %+v, %v; want %+v", out, err, in)
	}
}

func TestMergeOverrideWins(t *testing.T) {
	server := hints.Hints{Effect: hints.EffectRead, Idempotent: hints.Bool(true), ResultSensitivity: hints.SensitivityPublic}
	deployer := hints.Hints{ResultSensitivity: hints.SensitivityRestricted, RequiresConfirmation: hints.Bool(true)}
	got := hints.Merge(server, deployer)
	want := hints.Hints{Effect: hints.EffectRead, Idempotent: hints.Bool(true), RequiresConfirmation: hints.Bool(true), ResultSensitivity: hints.SensitivityRestricted}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Merge = %+v, want %+v", got, want)
	}
}

func TestWorstCase(t *testing.T) {
	got := hints.WorstCase(
		hints.Hints{Effect: hints.EffectRead, Idempotent: hints.Bool(true), RequiresConfirmation: hints.Bool(false), ResultSensitivity: hints.SensitivityPublic},
		hints.Hints{Effect: hints.EffectDelete, Idempotent: hints.Bool(true), RequiresConfirmation: hints.Bool(true), ResultSensitivity: hints.SensitivityInternal},
		hints.Hints{Effect: hints.EffectWrite, Idempotent: hints.Bool(false), RequiresConfirmation: hints.Bool(false)},
	)
	want := hints.Hints{Effect: hints.EffectDelete, Idempotent: hints.Bool(false), RequiresConfirmation: hints.Bool(true)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("WorstCase = %+v, want %+v (sensitivity unknown in one row stays unknown)", got, want)
	}
}

func TestDeriveAndContradictions(t *testing.T) {
	readOnly := preflight.Annotations{ReadOnlyHint: true}
	if d := hints.Derive(readOnly); d.Effect != hints.EffectRead || !*d.Idempotent || *d.RequiresConfirmation {
		t.Errorf("Derive(read-only) = %+v", d)
	}
	if d := hints.Derive(preflight.DefaultAnnotations); d.Effect != hints.EffectWrite || *d.Idempotent || !*d.RequiresConfirmation {
		t.Errorf("Derive(defaults) = %+v", d)
	}
	cases := []struct {
		ann  preflight.Annotations
		h    hints.Hints
		want string
	}{
		{preflight.Annotations{DestructiveHint: true}, hints.Hints{Effect: hints.EffectRead}, `"read" but readOnlyHint is false`},
		{readOnly, hints.Hints{Effect: hints.EffectWrite}, `"write" but readOnlyHint is true`},
		{preflight.Annotations{}, hints.Hints{Effect: hints.EffectDelete}, `"delete" but destructiveHint is false`},
		{preflight.Annotations{}, hints.Hints{Effect: hints.EffectExternal}, `"external" but openWorldHint is false`},
		{preflight.Annotations{IdempotentHint: true}, hints.Hints{Idempotent: hints.Bool(false)}, "false but idempotentHint is true"},
		{readOnly, hints.Hints{Effect: hints.EffectRead, Idempotent: hints.Bool(true)}, ""},
	}
	for _, c := range cases {
		got := hints.Contradictions(c.ann, c.h)
		if c.want == "" {
			if len(got) != 0 {
				t.Errorf("%+v %+v: unexpected %v", c.ann, c.h, got)
			}
			continue
		}
		if len(got) != 1 || !strings.Contains(got[0].String(), c.want) {
			t.Errorf("%+v %+v: got %v, want %q", c.ann, c.h, got, c.want)
		}
	}
}

func TestObject(t *testing.T) {
	h := hints.Hints{Effect: hints.EffectRead, Idempotent: hints.Bool(true), ResultSensitivity: hints.SensitivityPublic}
	want := map[string]any{"effect": "read", "idempotent": true, "resultSensitivity": "public"}
	if got := h.Object(); !reflect.DeepEqual(got, want) {
		t.Errorf("Object = %v, want %v", got, want)
	}
	if got := (hints.Hints{}).Object(); got != nil {
		t.Errorf("Object of no hints = %v, want nil", got)
	}
	_, err := hints.ReadObject(map[string]any{"effect": "shred", "requiresConfirmation": "yes"})
	for _, want := range []string{
		`mcp.dev/policy-hints.effect: invalid value "shred" (allowed: read, write, external, delete)`,
		`mcp.dev/policy-hints.requiresConfirmation: invalid value "yes" (allowed: true, false)`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	if _, err := hints.ReadObject("read"); err == nil || !strings.Contains(err.Error(), "not an object") {
		t.Errorf("a string under mcp.dev/policy-hints: err = %v", err)
	}
	meta := map[string]any{preflight.MetaEffect: "read", "other/key": 1}
	if got := hints.Without(meta); !reflect.DeepEqual(got, map[string]any{"other/key": 1}) || len(meta) != 2 {
		t.Errorf("Without = %v (input now %v)", got, meta)
	}
	if got := hints.Without(map[string]any{preflight.MetaEffect: "read"}); got != nil {
		t.Errorf("Without of hints alone = %v, want nil", got)
	}
}
