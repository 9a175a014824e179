package pin

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/requeststate"
)

// hintPrefix starts every policy-hint key of a tool's _meta: the scalar
// keys (preflight.MetaEffect and the others), preflight.MetaPolicyHints
// and preflight.MetaSecuritySchemes.
const hintPrefix = "mcp.dev/"

// pinnedMeta reports whether a _meta key is part of a pinned definition:
// the policy hints and the tool-resolution marker (a tool that becomes
// resolvable may lift its confirmation call by call).
func pinnedMeta(key string) bool {
	return strings.HasPrefix(key, hintPrefix) || key == preflight.ExtensionToolResolution
}

// Definition is what is pinned of a tool: what a model or a policy reads
// of it. The JSON fields hold the upstream's values as the SDK decodes
// them, the annotations with the core defaults spelled out; _meta holds
// only the policy-hint keys (mcp.dev/...) and the tool-resolution marker.
// Icons and other _meta keys are not pinned.
//
// A Definition is immutable once made by [Define] or decoded from JSON.
type Definition struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	Meta         json.RawMessage `json:"_meta,omitempty"`

	fingerprint string
}

// Define returns the definition of t, with its fingerprint.
func Define(t *mcp.Tool) (*Definition, error) {
	if t == nil {
		return nil, fmt.Errorf("pin: no tool")
	}
	d := &Definition{Name: t.Name, Title: t.Title, Description: t.Description}
	var err error
	if t.InputSchema != nil {
		if d.InputSchema, err = json.Marshal(t.InputSchema); err != nil {
			return nil, fmt.Errorf("pin: tool %q: inputSchema: %w", clean(t.Name, maxValue), err)
		}
	}
	if t.OutputSchema != nil {
		if d.OutputSchema, err = json.Marshal(t.OutputSchema); err != nil {
			return nil, fmt.Errorf("pin: tool %q: outputSchema: %w", clean(t.Name, maxValue), err)
		}
	}
	// The annotations are pinned with the core defaults spelled out, so
	// that a server that starts writing a default it left out has not
	// changed anything.
	title := ""
	if t.Annotations != nil {
		title = t.Annotations.Title
	}
	if d.Annotations, err = json.Marshal(preflight.AnnotationsOf(t.Annotations).ToolAnnotations(title)); err != nil {
		return nil, fmt.Errorf("pin: tool %q: annotations: %w", clean(t.Name, maxValue), err)
	}
	if meta := maps.Collect(func(yield func(string, any) bool) {
		for k, v := range t.Meta {
			if pinnedMeta(k) && !yield(k, v) {
				return
			}
		}
	}); len(meta) > 0 {
		if d.Meta, err = json.Marshal(meta); err != nil {
			return nil, fmt.Errorf("pin: tool %q: _meta: %w", clean(t.Name, maxValue), err)
		}
	}
	if err := d.seal(); err != nil {
		return nil, fmt.Errorf("pin: tool %q: %w", clean(t.Name, maxValue), err)
	}
	return d, nil
}

// NewToolPin returns the pin of a tool first seen after its server's first
// listing (strict mode): its name, and nothing approved. Its fingerprint
// is no served definition's, so the tool stays quarantined until someone
// approves what it serves.
func NewToolPin(name string) *Definition {
	d := &Definition{Name: name}
	_ = d.seal() // a name always encodes
	return d
}

// NewTool reports whether d is a [NewToolPin]: a definition made by
// [Define] always has annotations (the defaults spelled out).
func (d *Definition) NewTool() bool { return len(d.Annotations) == 0 }

// seal computes the fingerprint.
func (d *Definition) seal() error {
	type plain Definition // without the methods, to marshal the fields
	data, err := json.Marshal((*plain)(d))
	if err != nil {
		return err
	}
	fp, err := requeststate.ArgumentsDigest(json.RawMessage(data))
	if err != nil {
		return err
	}
	d.fingerprint = fp
	return nil
}

// Fingerprint is the SHA-256 of the canonical JSON of d (objects' members
// sorted, numbers by value, no insignificant whitespace), in base64url
// without padding: two definitions that differ only in the order of keys
// or the spelling of numbers have the same fingerprint.
func (d *Definition) Fingerprint() string { return d.fingerprint }

// UnmarshalJSON reads a definition and computes its fingerprint.
func (d *Definition) UnmarshalJSON(data []byte) error {
	type plain Definition
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*d = Definition(p)
	return d.seal()
}

// MarshalJSON writes d's fields (the fingerprint is computed, not stored).
func (d *Definition) MarshalJSON() ([]byte, error) {
	type plain Definition
	return json.Marshal((*plain)(d))
}

// Tool returns d as an SDK tool: what a gateway lists for it.
func (d *Definition) Tool() *mcp.Tool {
	t := &mcp.Tool{Name: d.Name, Title: d.Title, Description: d.Description}
	if len(d.InputSchema) > 0 {
		t.InputSchema = d.InputSchema
	} else {
		t.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	if len(d.OutputSchema) > 0 {
		t.OutputSchema = d.OutputSchema
	}
	if len(d.Annotations) > 0 {
		var a mcp.ToolAnnotations
		if json.Unmarshal(d.Annotations, &a) == nil {
			t.Annotations = &a
		}
	}
	if len(d.Meta) > 0 {
		var m map[string]any
		if json.Unmarshal(d.Meta, &m) == nil {
			t.Meta = m
		}
	}
	return t
}
