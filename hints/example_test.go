package hints_test

import (
	"fmt"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/hints"
)

func ExampleRead() {
	meta := map[string]any{
		"mcp.dev/effect":               "delete",
		"mcp.dev/requiresConfirmation": true,
		"mcp.dev/resultSensitivity":    "top-secret",
	}
	h, err := hints.Read(meta)
	fmt.Println(h.Effect, *h.RequiresConfirmation)
	fmt.Println(err)
	// Output:
	// delete true
	// mcp.dev/resultSensitivity: invalid value "top-secret" (allowed: public, internal, confidential, restricted)
}

func ExampleContradictions() {
	ann := preflight.Annotations{ReadOnlyHint: false, DestructiveHint: true}
	for _, c := range hints.Contradictions(ann, hints.Hints{Effect: hints.EffectRead}) {
		fmt.Println(c)
	}
	// Output:
	// mcp.dev/effect: "read" but readOnlyHint is false
}

func ExampleExceeds() {
	static := hints.Declaration{
		Annotations: preflight.Annotations{ReadOnlyHint: true, IdempotentHint: true},
		Hints:       hints.Hints{Effect: hints.EffectRead, ResultSensitivity: hints.SensitivityInternal},
	}
	resolved := hints.Declaration{
		Annotations: preflight.Annotations{ReadOnlyHint: true, IdempotentHint: true},
		Hints:       hints.Hints{Effect: hints.EffectRead, ResultSensitivity: hints.SensitivityRestricted},
	}
	for _, x := range hints.Exceeds(static, resolved) {
		fmt.Println(x)
	}
	// Output:
	// mcp.dev/resultSensitivity (static "internal", resolved "restricted")
}
