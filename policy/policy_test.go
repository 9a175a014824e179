package policy_test

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/policy"
)

func TestEvaluateSources(t *testing.T) {
	f := false
	static := &mcp.ToolAnnotations{DestructiveHint: &f} // openWorld left to the default
	cases := []struct {
		name         string
		in           policy.Input
		readOnly     policy.Value[bool]
		openWorld    policy.Value[bool]
		confirm      policy.Value[bool]
		effect       policy.Value[hints.Effect]
		sensitivity  policy.Value[hints.Sensitivity] // zero: not checked
		needsConfirm bool
		retry        bool
	}{
		{
			name:     "nothing known: protocol defaults, derived hints",
			in:       policy.Input{},
			readOnly: policy.Value[bool]{false, policy.SourceDefault}, openWorld: policy.Value[bool]{true, policy.SourceDefault},
			confirm: policy.Value[bool]{true, policy.SourceDerived}, effect: policy.Value[hints.Effect]{hints.EffectWrite, policy.SourceDerived},
			needsConfirm: true, retry: false,
		},
		{
			name:     "static only",
			in:       policy.Input{Static: static, StaticHints: hints.Hints{Effect: hints.EffectWrite}},
			readOnly: policy.Value[bool]{false, policy.SourceStatic}, openWorld: policy.Value[bool]{true, policy.SourceDefault},
			confirm: policy.Value[bool]{false, policy.SourceDerived}, effect: policy.Value[hints.Effect]{hints.EffectWrite, policy.SourceStatic},
			needsConfirm: false, retry: false,
		},
		{
			name:     "static hints win over the derived ones for a call that was not resolved",
			in:       policy.Input{Static: static, StaticHints: hints.Hints{RequiresConfirmation: hints.Bool(true)}},
			readOnly: policy.Value[bool]{false, policy.SourceStatic}, openWorld: policy.Value[bool]{true, policy.SourceDefault},
			confirm: policy.Value[bool]{true, policy.SourceStatic}, effect: policy.Value[hints.Effect]{hints.EffectWrite, policy.SourceDerived},
			needsConfirm: true, retry: false,
		},
		{
			// The README's read row: the static worst case asks for
			// confirmation; the resolution does not say, so it is
			// derived from the resolved annotations.
			name: "resolved: the static worst case is not inherited",
			in: policy.Input{Static: static, StaticHints: hints.Hints{Effect: hints.EffectDelete, RequiresConfirmation: hints.Bool(true), ResultSensitivity: hints.SensitivityRestricted},
				Resolved: &preflight.Annotations{ReadOnlyHint: true}, ResolvedHints: hints.Hints{Effect: hints.EffectRead}},
			readOnly: policy.Value[bool]{true, policy.SourceResolved}, openWorld: policy.Value[bool]{false, policy.SourceResolved},
			confirm: policy.Value[bool]{false, policy.SourceDerived}, effect: policy.Value[hints.Effect]{hints.EffectRead, policy.SourceResolved},
			sensitivity:  policy.Value[hints.Sensitivity]{"", policy.SourceDefault},
			needsConfirm: false, retry: true,
		},
		{
			// The README's append row: a write, not destructive.
			name: "resolved write that is not destructive needs no confirmation",
			in: policy.Input{Static: static, StaticHints: hints.Hints{RequiresConfirmation: hints.Bool(true)},
				Resolved: &preflight.Annotations{}, ResolvedHints: hints.Hints{Effect: hints.EffectWrite}},
			readOnly: policy.Value[bool]{false, policy.SourceResolved}, openWorld: policy.Value[bool]{false, policy.SourceResolved},
			confirm: policy.Value[bool]{false, policy.SourceDerived}, effect: policy.Value[hints.Effect]{hints.EffectWrite, policy.SourceResolved},
			needsConfirm: false, retry: false,
		},
		{
			name: "resolved destructive call derives confirmation",
			in: policy.Input{Static: static, StaticHints: hints.Hints{RequiresConfirmation: hints.Bool(false)},
				Resolved: &preflight.Annotations{DestructiveHint: true, IdempotentHint: true}, ResolvedHints: hints.Hints{ResultSensitivity: hints.SensitivityInternal}},
			readOnly: policy.Value[bool]{false, policy.SourceResolved}, openWorld: policy.Value[bool]{false, policy.SourceResolved},
			confirm: policy.Value[bool]{true, policy.SourceDerived}, effect: policy.Value[hints.Effect]{hints.EffectWrite, policy.SourceDerived},
			sensitivity:  policy.Value[hints.Sensitivity]{hints.SensitivityInternal, policy.SourceResolved},
			needsConfirm: true, retry: true,
		},
		{
			name: "override wins over everything",
			in: policy.Input{Resolved: &preflight.Annotations{ReadOnlyHint: true}, ResolvedHints: hints.Hints{RequiresConfirmation: hints.Bool(false)},
				Overrides: hints.Hints{RequiresConfirmation: hints.Bool(true)}},
			readOnly: policy.Value[bool]{true, policy.SourceResolved}, openWorld: policy.Value[bool]{false, policy.SourceResolved},
			confirm: policy.Value[bool]{true, policy.SourceOverride}, effect: policy.Value[hints.Effect]{hints.EffectRead, policy.SourceDerived},
			needsConfirm: true, retry: true,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := policy.Evaluate(c.in)
			if e.ReadOnly != c.readOnly || e.OpenWorld != c.openWorld || e.RequiresConfirmation != c.confirm || e.Effect != c.effect {
				t.Errorf("got readOnly %v openWorld %v confirm %v effect %v", e.ReadOnly, e.OpenWorld, e.RequiresConfirmation, e.Effect)
			}
			if c.sensitivity != (policy.Value[hints.Sensitivity]{}) && e.ResultSensitivity != c.sensitivity {
				t.Errorf("result sensitivity %v, want %v", e.ResultSensitivity, c.sensitivity)
			}
			if e.NeedsConfirmation() != c.needsConfirm || e.SafeToRetry() != c.retry {
				t.Errorf("confirm %v retry %v, want %v %v", e.NeedsConfirmation(), e.SafeToRetry(), c.needsConfirm, c.retry)
			}
		})
	}
}
