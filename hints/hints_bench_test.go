package hints_test

import (
	"testing"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/hints"
)

// benchHints sets all four keys.
var benchHints = hints.Hints{
	Effect:               hints.EffectDelete,
	Idempotent:           hints.Bool(true),
	RequiresConfirmation: hints.Bool(true),
	ResultSensitivity:    hints.SensitivityConfidential,
}

// BenchmarkRead measures reading the four mcp.dev/ keys from a _meta map
// as a client decodes it (plain JSON values), with and without other keys
// around them, and with an invalid value (the error path).
func BenchmarkRead(b *testing.B) {
	valid := benchHints.Write(nil)
	crowded := benchHints.Write(map[string]any{
		preflight.ExtensionToolResolution: map[string]any{"resolvable": true},
		"com.example/owner":               "team-files",
		"com.example/cost":                3.5,
	})
	invalid := benchHints.Write(nil)
	invalid[preflight.MetaEffect] = "shred"
	cases := []struct {
		name    string
		meta    map[string]any
		wantErr bool
	}{
		{"keys=4", valid, false},
		{"keys=4+3other", crowded, false},
		{"keys=0", map[string]any{}, false},
		{"invalid", invalid, true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := hints.Read(c.meta); (err != nil) != c.wantErr {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWrite measures writing the four keys into a fresh _meta and
// into a copy of one that already holds other keys.
func BenchmarkWrite(b *testing.B) {
	existing := map[string]any{
		preflight.ExtensionToolResolution: map[string]any{"resolvable": true},
		"com.example/owner":               "team-files",
	}
	for _, c := range []struct {
		name string
		meta map[string]any
	}{{"into=nil", nil}, {"into=2keys", existing}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if m := benchHints.Write(c.meta); len(m) != len(c.meta)+4 {
					b.Fatal(m)
				}
			}
		})
	}
}

// BenchmarkExceeds measures the bounds check that the server runs on every
// resolution it sends and the client on every one it receives: within the
// bounds (the common case), and beyond them.
func BenchmarkExceeds(b *testing.B) {
	static := hints.Declaration{
		Annotations: preflight.Annotations{DestructiveHint: true},
		Hints:       hints.Hints{Effect: hints.EffectDelete, ResultSensitivity: hints.SensitivityConfidential},
	}
	within := hints.Declaration{
		Annotations: preflight.Annotations{ReadOnlyHint: true, IdempotentHint: true},
		Hints:       hints.Hints{Effect: hints.EffectRead, ResultSensitivity: hints.SensitivityPublic},
	}
	beyond := hints.Declaration{
		Annotations: preflight.Annotations{DestructiveHint: true, OpenWorldHint: true},
		Hints:       hints.Hints{Effect: hints.EffectDelete, ResultSensitivity: hints.SensitivityRestricted},
	}
	b.Run("within", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if over := hints.Exceeds(static, within); len(over) != 0 {
				b.Fatal(over)
			}
		}
	})
	b.Run("beyond", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if over := hints.Exceeds(static, beyond); len(over) != 2 {
				b.Fatal(over)
			}
		}
	})
}
