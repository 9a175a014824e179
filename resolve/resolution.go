package resolve

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/hints"
)

// A Resolution is what a server knows about one call before it runs: the
// four behaviour annotations, the policy hints, and any further metadata.
type Resolution struct {
	// Annotations are the call's behaviour hints, every one explicit.
	Annotations preflight.Annotations
	// Hints are the call's policy hints; unset hints are left out.
	Hints hints.Hints
	// SecuritySchemes are the call's authorization requirements in the
	// SEP-1488 shape, e.g. [{Type: "noauth"}] for public data; nil when
	// the resolution says nothing about them.
	SecuritySchemes []preflight.SecurityScheme
	// Meta is further metadata, keyed by _meta keys (reverse-DNS
	// prefixed). This is where metadata that has no field yet travels,
	// with no new method needed. In the seed shape every entry goes into
	// the returned tool's _meta. In the extension shape, whose result
	// _meta holds only objects owned by extensions the client declared,
	// an entry is sent only to a request that declared its key in
	// capabilities.extensions, and only if its value is a JSON object.
	Meta map[string]any
}

// check reports invalid hints and hints that contradict the annotations.
func (r *Resolution) check() error {
	if err := r.Hints.Validate(); err != nil {
		return err
	}
	if cs := hints.Contradictions(r.Annotations, r.Hints); len(cs) > 0 {
		msgs := make([]string, len(cs))
		for i, c := range cs {
			msgs[i] = c.String()
		}
		return fmt.Errorf("hints contradict the annotations: %s", strings.Join(msgs, "; "))
	}
	return nil
}

// A Call is the tool call a resolver is asked about.
type Call struct {
	// Name is the tool's name.
	Name string
	// Arguments are the complete arguments, already validated against the
	// tool's input schema. Do not modify them.
	Arguments map[string]any
	// Caller is what is known about the client that asks.
	Caller Caller
}

// A Caller is what a resolver may know about the client behind a call. It
// is a view, not a connection: a resolver cannot send the client anything
// (no elicitation, no sampling, no roots), so a resolution never waits on a
// person or a model.
type Caller struct {
	// SessionID is the id of the legacy session the call came in; "" under
	// 2026-07-28 and on transports without session ids, such as stdio.
	SessionID string
	// ProtocolVersion is the protocol version of the request.
	ProtocolVersion string
	// Capabilities are the client's capabilities: the request's own under
	// 2026-07-28, the ones declared in initialize before. Nil if unknown.
	// Do not modify them.
	Capabilities *mcp.ClientCapabilities
	// TokenInfo is the request's verified bearer token (its user and
	// scopes) when the HTTP handler checks tokens, as
	// [auth.RequireBearerToken] does; nil otherwise. Do not modify it.
	TokenInfo *auth.TokenInfo
}

// A Resolver computes the resolution of one call. It must be cheap and
// must have no side effects: it may read state (a file's existence, a
// repository's visibility), never write it, and it cannot ask the client
// anything. A returned error is reported to the client as -32603 and the
// client falls back to the static annotations.
type Resolver interface {
	Resolve(ctx context.Context, call *Call) (Resolution, error)
}

// ResolverFunc adapts a function to [Resolver].
type ResolverFunc func(ctx context.Context, call *Call) (Resolution, error)

// Resolve calls f.
func (f ResolverFunc) Resolve(ctx context.Context, call *Call) (Resolution, error) {
	return f(ctx, call)
}

// A Table resolves a tool declaratively: the value of one argument selects
// a row. A table is pure (same arguments, same answer) and the static
// annotations and hints of its tool are derived from it, as the worst case
// of its rows, so that tools/list and tools/resolve cannot drift apart.
type Table struct {
	// Argument names the argument whose value selects the row.
	Argument string
	// Rows maps an argument value to its resolution. String values are
	// used as they are; other JSON values by their JSON encoding ("true",
	// "3").
	Rows map[string]Resolution
	// Default resolves values that have no row. Nil means such values
	// resolve to the static (worst-case) resolution.
	Default *Resolution
}

// rowKey returns the key of v in Rows.
func rowKey(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Static returns the worst case of every row, and of Default when set:
// the resolution tools/list declares for the tool. A hint a row leaves
// out is first derived from that row's own annotations ([hints.Derive]),
// as a client derives it when the row is the resolution; result
// sensitivity, which cannot be derived, is declared only if every row
// gives it.
func (t *Table) Static() Resolution {
	rows := slices.Collect(maps.Values(t.Rows))
	if t.Default != nil {
		rows = append(rows, *t.Default)
	}
	anns := make([]preflight.Annotations, len(rows))
	hs := make([]hints.Hints, len(rows))
	for i, r := range rows {
		anns[i], hs[i] = r.Annotations, hints.Merge(hints.Derive(r.Annotations), r.Hints)
	}
	return Resolution{Annotations: preflight.WorstCase(anns...), Hints: hints.WorstCase(hs...)}
}

// enum returns the values of t's rows, for the enum of an input schema
// inferred from a Go type: a string property takes the keys as they are,
// any other the JSON values the keys encode. Values are sorted by key.
func (t *Table) enum(propType string) []any {
	keys := slices.Sorted(maps.Keys(t.Rows))
	out := make([]any, 0, len(keys))
	for _, k := range keys {
		var v any = k
		if propType != "string" {
			if err := json.Unmarshal([]byte(k), &v); err != nil {
				v = k
			}
		}
		out = append(out, v)
	}
	return out
}

// Resolve returns the row selected by the call's argument.
func (t *Table) Resolve(_ context.Context, call *Call) (Resolution, error) {
	v, ok := call.Arguments[t.Argument]
	if ok {
		if r, found := t.Rows[rowKey(v)]; found {
			return r, nil
		}
	}
	if t.Default != nil {
		return *t.Default, nil
	}
	return t.Static(), nil
}

// check reports misuse of t for a tool with the given input schema: an
// argument the schema does not have, rows for values outside its enum, and
// enum values with no row and no Default.
func (t *Table) check(schema map[string]any) error {
	if t.Argument == "" {
		return fmt.Errorf("table has no Argument")
	}
	if len(t.Rows) == 0 {
		return fmt.Errorf("table for argument %q has no rows", t.Argument)
	}
	for key, r := range t.Rows {
		if err := r.check(); err != nil {
			return fmt.Errorf("row %q: %w", key, err)
		}
	}
	if t.Default != nil {
		if err := t.Default.check(); err != nil {
			return fmt.Errorf("default row: %w", err)
		}
	}
	props, _ := schema["properties"].(map[string]any)
	prop, ok := props[t.Argument].(map[string]any)
	if !ok {
		return fmt.Errorf("table selects on argument %q, which the input schema does not define", t.Argument)
	}
	enum, _ := prop["enum"].([]any)
	if len(enum) == 0 {
		if t.Default == nil {
			return fmt.Errorf("argument %q has no enum, so the table needs a Default for values without a row", t.Argument)
		}
		return nil
	}
	values := make(map[string]bool, len(enum))
	for _, v := range enum {
		values[rowKey(v)] = true
	}
	for key := range t.Rows {
		if !values[key] {
			return fmt.Errorf("row %q is not a value of argument %q (enum: %v)", key, t.Argument, enum)
		}
	}
	if t.Default == nil {
		for _, v := range enum {
			if _, ok := t.Rows[rowKey(v)]; !ok {
				return fmt.Errorf("value %q of argument %q has no row, and the table has no Default", rowKey(v), t.Argument)
			}
		}
	}
	return nil
}
