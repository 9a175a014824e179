package lint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/hints"
)

// A Session is one connection to a live server, as lint uses it. Results
// are raw, as received: the Go SDK's decoded types drop the seed's
// top-level Tool.resolve and capabilities.tools.resolve and cannot tell an
// absent annotation from a false one.
type Session interface {
	// InitializeResult returns the raw result of the handshake
	// (initialize, or server/discover under 2026-07-28).
	InitializeResult() json.RawMessage
	// ListTools returns the raw result of every tools/list page, in order.
	ListTools(ctx context.Context) ([]json.RawMessage, error)
	// Resolve sends tools/resolve and returns the raw result. A JSON-RPC
	// error is returned as a *jsonrpc.Error.
	Resolve(ctx context.Context, name string, args map[string]any) (json.RawMessage, error)
}

// A Describer is a [Session] that can read the full definitions of tools
// from a server that lists them minimally (progressive disclosure, seed
// 004, package disclose): [Observe] checks the full definitions, not the
// short listing, when the primary session implements it.
type Describer interface {
	// Describe returns the URI of the server's tool_descriptions resource
	// and the full definition of each named tool it serves, keyed by name;
	// "" and nil when the server has no such resource.
	Describe(ctx context.Context, names []string) (uri string, defs map[string]json.RawMessage, err error)
}

// ProbeOptions say how [Observe] probes tools/resolve.
type ProbeOptions struct {
	// MaxVariants bounds the valid argument variants per tool; 0 means
	// [DefaultMaxVariants].
	MaxVariants int
	// Determinism sends every valid variant twice and compares.
	Determinism bool
	// Invalid sends arguments that break the input schema, and a request
	// for a tool that does not exist.
	Invalid bool
}

// unknownTool is the name lint resolves to see that unknown tools are
// refused.
const unknownTool = "preflight-lint-no-such-tool"

// Observe lists the tools of a live server and probes tools/resolve for
// every tool marked resolvable, in each shape: ext is a session whose
// client declared the tool-resolution extension, seed one whose client
// declared nothing (either may be nil). source names the server in the
// output. opts may be nil (valid variants only). An error means the
// server could not be observed (tools/list failed).
func Observe(ctx context.Context, source string, ext, seed Session, opts *ProbeOptions) (*Target, error) {
	if opts == nil {
		opts = &ProbeOptions{}
	}
	if ext == nil && seed == nil {
		return nil, errors.New("lint.Observe: no session")
	}
	t := &Target{Kind: KindServer, Source: source, Capabilities: &Capabilities{}, Tools: []*Tool{}}
	seedCapability := false

	// The handshake of each view.
	for _, v := range []struct {
		s     Session
		shape string
	}{{ext, ShapeExtension}, {seed, ShapeSeed}} {
		if v.s == nil {
			continue
		}
		var init struct {
			ProtocolVersion string              `json:"protocolVersion"`
			ServerInfo      *mcp.Implementation `json:"serverInfo"`
			Capabilities    struct {
				Extensions map[string]any `json:"extensions"`
				Tools      struct {
					Resolve any `json:"resolve"`
				} `json:"tools"`
			} `json:"capabilities"`
		}
		if raw := v.s.InitializeResult(); len(raw) > 0 {
			if err := json.Unmarshal(raw, &init); err != nil {
				return nil, fmt.Errorf("reading the %s handshake: %w", v.shape, err)
			}
		}
		if t.Server == nil && init.ServerInfo != nil {
			t.Server = init.ServerInfo
		}
		if t.ProtocolVersion == "" {
			t.ProtocolVersion = init.ProtocolVersion
		}
		if _, ok := init.Capabilities.Extensions[preflight.ExtensionToolResolution]; ok && v.shape == ShapeExtension {
			t.Capabilities.Extension = true
		}
		if init.Capabilities.Tools.Resolve == true {
			seedCapability = true
		}
	}

	// The tools, as the primary view lists them (the extension's, whose
	// client sees both markers), and the seed's top-level marker as the
	// other view lists it.
	primary, secondary := ext, seed
	if primary == nil {
		primary, secondary = seed, nil
	}
	list := func(s Session) ([]*Tool, error) {
		pages, err := s.ListTools(ctx)
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		var out []*Tool
		for _, page := range pages {
			var res struct {
				Tools []json.RawMessage `json:"tools"`
			}
			if err := json.Unmarshal(page, &res); err != nil {
				return nil, fmt.Errorf("tools/list: %w", err)
			}
			for _, raw := range res.Tools {
				tool, err := ParseTool(raw)
				if err != nil {
					return nil, fmt.Errorf("tools/list: %w", err)
				}
				out = append(out, tool)
			}
		}
		return out, nil
	}
	tools, err := list(primary)
	if err != nil {
		return nil, err
	}
	if primary != ext {
		for _, tool := range tools {
			tool.ExtensionMarker = false // not declared: not meant for this client
		}
	}
	t.Tools = append(t.Tools, tools...)
	if secondary != nil {
		others, err := list(secondary)
		if err != nil {
			return nil, err
		}
		for _, o := range others {
			for _, tool := range t.Tools {
				if tool.Name == o.Name {
					tool.SeedMarker = tool.SeedMarker || o.SeedMarker
					break
				}
			}
		}
	}

	// The seed capability counts as declared. Without a seed view, a
	// server that shows the seed's marker only to clients that declared
	// nothing cannot be checked for markers: the capability then counts
	// only when the tools listed carry the marker anyway.
	t.Capabilities.Seed = seedCapability
	if seed == nil && seedCapability && !slices.ContainsFunc(t.Tools, func(tool *Tool) bool { return tool.SeedMarker }) {
		t.Capabilities.Seed = false
		t.Notes = append(t.Notes, "the server declares capabilities.tools.resolve (the seed shape), which was not checked: no session declared nothing")
	}

	if d, ok := primary.(Describer); ok && len(t.Tools) > 0 {
		if err := describeTools(ctx, t, d); err != nil {
			return nil, err
		}
	}

	sessions := map[string]Session{ShapeExtension: ext, ShapeSeed: seed}
	probeShapes := func(tool *Tool) []string {
		var out []string
		if tool.ExtensionMarker && ext != nil {
			out = append(out, ShapeExtension)
		}
		if tool.SeedMarker && seed != nil {
			out = append(out, ShapeSeed)
		}
		return out
	}
	anyMarked := false
	for _, tool := range t.Tools {
		shapes := probeShapes(tool)
		if len(shapes) == 0 {
			continue
		}
		anyMarked = true
		args := Enumerate(tool.InputSchema, opts.MaxVariants)
		tool.Coverage = &Coverage{Enumerated: args.Enumerated, Variants: len(args.Valid), Capped: args.Capped, Skipped: args.Skipped}
		for i, a := range args.Valid {
			v := &Variant{Arguments: a, Label: args.Labels[i]}
			for _, shape := range shapes {
				p := probe(ctx, sessions[shape], shape, tool.Name, a)
				if opts.Determinism && (p.Err == "" || p.Code != 0) {
					again := probe(ctx, sessions[shape], shape, tool.Name, a)
					p.Again = differ(p, again)
				}
				v.Probes = append(v.Probes, p)
			}
			tool.Variants = append(tool.Variants, v)
		}
		if opts.Invalid {
			for i, a := range args.Invalid {
				p := probe(ctx, sessions[shapes[0]], shapes[0], tool.Name, a)
				p.Kind = args.Kinds[i]
				tool.Invalid = append(tool.Invalid, p)
			}
		}
	}
	if opts.Invalid && (anyMarked || t.Capabilities.Extension || t.Capabilities.Seed) {
		shape := ShapeExtension
		if ext == nil || !t.Capabilities.Extension && t.Capabilities.Seed && seed != nil {
			shape = ShapeSeed
		}
		if sessions[shape] != nil {
			t.Unknown = probe(ctx, sessions[shape], shape, unknownTool, map[string]any{})
			t.Unknown.Kind = "unknown tool"
		}
	}
	return t, nil
}

// describeTools replaces what t's tools list minimally with their full
// definitions, when the server serves them.
func describeTools(ctx context.Context, t *Target, d Describer) error {
	names := make([]string, len(t.Tools))
	for i, tool := range t.Tools {
		names[i] = tool.Name
	}
	uri, defs, err := d.Describe(ctx, names)
	if err != nil {
		return fmt.Errorf("reading the full tool definitions: %w", err)
	}
	if uri == "" {
		return nil
	}
	t.Descriptions = uri
	for i, tool := range t.Tools {
		def, ok := defs[tool.Name]
		if !ok {
			continue
		}
		full, err := withDefinition(tool, def)
		if err != nil {
			return fmt.Errorf("reading the full definition of %q from %s: %w", tool.Name, uri, err)
		}
		if full != nil {
			t.Tools[i] = full
		}
	}
	return nil
}

// definitionFields are the fields a full definition gives; the listing
// keeps the rest (name, _meta with markers and hints, the seed's marker).
var definitionFields = []string{"title", "description", "inputSchema", "outputSchema", "annotations"}

// withDefinition returns tool with the fields of its full definition def,
// or nil when def is an error entry ({"error": ...}: the server does not
// know the tool).
func withDefinition(tool *Tool, def json.RawMessage) (*Tool, error) {
	var d map[string]json.RawMessage
	if err := json.Unmarshal(def, &d); err != nil || d == nil {
		return nil, fmt.Errorf("%s, not a tool definition", jsonKind(def))
	}
	if _, isError := d["error"]; isError {
		return nil, nil
	}
	var listed map[string]json.RawMessage
	if err := json.Unmarshal(tool.raw, &listed); err != nil || listed == nil {
		listed = map[string]json.RawMessage{}
		b, _ := json.Marshal(tool)
		_ = json.Unmarshal(b, &listed)
	}
	for _, f := range definitionFields {
		if v, ok := d[f]; ok {
			listed[f] = v
		}
	}
	raw, err := json.Marshal(listed)
	if err != nil {
		return nil, err
	}
	full, err := ParseTool(raw)
	if err != nil {
		return nil, errors.New(decodeProblem(err))
	}
	full.SeedMarker, full.ExtensionMarker = tool.SeedMarker, tool.ExtensionMarker
	full.Line, full.Described = tool.Line, true
	return full, nil
}

// probe sends one tools/resolve and reads the answer.
func probe(ctx context.Context, s Session, shape, name string, args map[string]any) *Probe {
	p := &Probe{Shape: shape, Arguments: args}
	raw, err := s.Resolve(ctx, name, args)
	if err != nil {
		var we *jsonrpc.Error
		if errors.As(err, &we) {
			p.Code = we.Code
		}
		p.Err = err.Error()
		return p
	}
	p.Raw = raw
	readResolution(p, name)
	return p
}

// readResolution checks a raw result against the shape asked for and
// reads its annotations and hints.
func readResolution(p *Probe, name string) {
	var res map[string]json.RawMessage
	if err := json.Unmarshal(p.Raw, &res); err != nil || res == nil {
		p.Malformed = "the result is not a JSON object"
		return
	}
	var meta map[string]any
	switch {
	case res["tool"] != nil && string(res["tool"]) != "null":
		p.GotShape = ShapeSeed
		tool, err := ParseTool(res["tool"])
		if err != nil {
			p.Malformed = "tool: " + err.Error()
			return
		}
		if tool.Name != name {
			p.Malformed = fmt.Sprintf("the result names tool %q, not %q", tool.Name, name)
			return
		}
		a := tool.Annotations.Effective()
		p.Annotations, meta = &a, tool.Meta
	case res["annotations"] != nil:
		p.GotShape = ShapeExtension
		var ext struct {
			ResultType  string                     `json:"resultType"`
			Name        string                     `json:"name"`
			Annotations map[string]json.RawMessage `json:"annotations"`
			Meta        map[string]any             `json:"_meta"`
		}
		if err := json.Unmarshal(p.Raw, &ext); err != nil {
			p.Malformed = err.Error()
			return
		}
		var problems []string
		if ext.ResultType != preflight.ResultTypeComplete {
			problems = append(problems, fmt.Sprintf("resultType is %q, want %q", ext.ResultType, preflight.ResultTypeComplete))
		}
		if ext.Name != name {
			problems = append(problems, fmt.Sprintf("name is %q, want %q", ext.Name, name))
		}
		var a preflight.Annotations
		for _, f := range []struct {
			key string
			dst *bool
		}{{"readOnlyHint", &a.ReadOnlyHint}, {"destructiveHint", &a.DestructiveHint}, {"idempotentHint", &a.IdempotentHint}, {"openWorldHint", &a.OpenWorldHint}} {
			v, ok := ext.Annotations[f.key]
			if !ok {
				problems = append(problems, "annotations."+f.key+" is missing (all four are required)")
				continue
			}
			if err := json.Unmarshal(v, f.dst); err != nil {
				problems = append(problems, "annotations."+f.key+" is not a boolean")
			}
		}
		if len(problems) > 0 {
			p.Malformed = strings.Join(problems, "; ")
			return
		}
		p.Annotations, meta = &a, ext.Meta
	default:
		p.Malformed = `neither {"tool": ...} (seed shape) nor {"resultType", "name", "annotations"} (extension shape)`
		return
	}
	if p.GotShape != p.Shape {
		want := "the extension shape, as the request declared " + preflight.ExtensionToolResolution
		if p.Shape == ShapeSeed {
			want = "the seed shape ({tool: ...}), as the request declared no extension"
		}
		p.Malformed = fmt.Sprintf("answered in the %s shape, want %s", p.GotShape, want)
		return
	}
	if p.GotShape == ShapeExtension {
		// The extension shape carries the hints as one negotiated object.
		p.Hints, p.HintError = hints.ReadObject(meta[preflight.MetaPolicyHints])
		return
	}
	p.Hints, p.HintError = hints.Read(meta)
}

// differ says how two answers to the same request differ in what a client
// decides from: the error, the annotations, the policy hints.
func differ(a, b *Probe) string {
	switch {
	case a.Code != b.Code || (a.Err == "") != (b.Err == ""):
		return fmt.Sprintf("first %s, then %s", outcome(a), outcome(b))
	case a.Err != "":
		return ""
	case !reflect.DeepEqual(a.Annotations, b.Annotations):
		return fmt.Sprintf("annotations %s, then %s", annText(a.Annotations), annText(b.Annotations))
	case !reflect.DeepEqual(a.Hints.Write(nil), b.Hints.Write(nil)):
		return fmt.Sprintf("hints %s, then %s", argsText(a.Hints.Write(nil)), argsText(b.Hints.Write(nil)))
	}
	return ""
}

func outcome(p *Probe) string {
	switch {
	case p.Code != 0:
		return fmt.Sprintf("error %d", p.Code)
	case p.Err != "":
		return "error: " + p.Err
	case p.Annotations != nil:
		return "a resolution " + annText(p.Annotations)
	}
	return "a malformed result"
}

// annText writes annotations as compact JSON.
func annText(a *preflight.Annotations) string {
	if a == nil {
		return "(none)"
	}
	b, _ := json.Marshal(a)
	return string(b)
}
