package config

import (
	"time"

	"github.com/preflightmcp/preflight/hints"
)

// Flow is flow control: a tool call whose arguments carry a value the
// client was shown by another call, from another server, is confirmed or
// denied. Its zero value, after [Parse], is the default: confirm,
// remembering every candidate value of restricted results (and the
// secrets found in any) for an hour, 4096 per principal.
type Flow struct {
	// Action is what such a call gets: confirm (default), deny, or off
	// (nothing is remembered or checked).
	Action FlowAction `json:"action"`
	// Sensitivity is the result sensitivity from which every candidate
	// value of a result is remembered; below it only the secrets found.
	// Default restricted.
	Sensitivity hints.Sensitivity `json:"sensitivity"`
	// TTL is how long a value is remembered. Default [DefaultFlowTTL].
	TTL Duration `json:"ttl"`
	// Max bounds the values remembered per principal (and legacy
	// session); the oldest go first. Default [DefaultFlowMax].
	Max int `json:"max"`
}

// FlowAction is what a call that carries a value read elsewhere gets.
type FlowAction string

// The flow actions.
const (
	FlowConfirm FlowAction = "confirm" // default
	FlowDeny    FlowAction = "deny"
	FlowOff     FlowAction = "off"
)

// ServerFlow is how calls to one server are checked.
type ServerFlow string

// The server flow modes.
const (
	ServerFlowOn     ServerFlow = "on"     // default: values read from other servers are checked
	ServerFlowOff    ServerFlow = "off"    // a trusted destination: never checked
	ServerFlowStrict ServerFlow = "strict" // writing a value back to this server is checked too
)

// Defaults and limits of the flow section.
const (
	DefaultFlowTTL = time.Hour
	DefaultFlowMax = 4096
	MaxFlowTTL     = 7 * 24 * time.Hour
	MaxFlowMax     = 1 << 20
)

// flow checks the flow section and applies its defaults.
func (p *parser) flow(f *Flow) {
	if f.Action == "" {
		f.Action = FlowConfirm
	}
	if f.Sensitivity == "" {
		f.Sensitivity = hints.SensitivityRestricted
	}
	switch {
	case f.TTL == 0:
		f.TTL = Duration(DefaultFlowTTL)
	case f.TTL < 0 || time.Duration(f.TTL) > MaxFlowTTL:
		p.fail("flow.ttl", "%s: more than 0 and at most %s", time.Duration(f.TTL), MaxFlowTTL)
	}
	switch {
	case f.Max == 0:
		f.Max = DefaultFlowMax
	case f.Max < 0 || f.Max > MaxFlowMax:
		p.fail("flow.max", "%d: from 1 to %d values per principal", f.Max, MaxFlowMax)
	}
}
