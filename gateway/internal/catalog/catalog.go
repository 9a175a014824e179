// Package catalog aggregates the tools, prompts, resources and resource
// templates of several upstream MCP servers into the one catalog a gateway
// serves, and routes a name or URI back to its upstream.
//
// It is pure: no I/O, no goroutines. An upstream's listing goes in as the
// raw JSON of each item (so annotations and unknown fields reach clients
// byte for byte) plus the SDK's decoded form where the gateway needs one;
// [Build] returns an immutable [View].
//
// # Names
//
// With more than one upstream configured, tool and prompt names are
// prefixed: prefix + separator + name, the prefix being the upstream's name
// unless [Naming.Prefix] says otherwise, the separator "__" unless
// [Naming.Separator] does. A gateway in front of a single upstream keeps
// its names unchanged. Every name a client sees is 1 to 128 characters of
// [A-Za-z0-9_.-], as the spec requires: a name that would be longer, hold
// another character, or clash with another exposed name is skipped and
// reported as a [Problem], never truncated or renamed. On a clash every
// item of that name is skipped, so that what a client sees does not depend
// on which upstream connected first.
//
// # Resources
//
// A resource URI or template that no other upstream could claim keeps its
// form, so that the URIs a server writes into its own content still work
// through the gateway. With more than one upstream, one that another could
// claim (the same URI, a URI another's template may match, two templates
// that may overlap) is exposed under its namespaced form, [NamespacedURI],
// which always reaches its upstream alone. A URI as the upstream knows it
// is routed only when exactly one upstream lists it or has a template
// matching it: a URI two upstreams claim is refused with the forms that
// name each, so that no upstream's listing takes reads meant for another.
//
// # Caching
//
// Each aggregated list carries a [Cache] derived from the upstreams' lists
// (see [Merge]): never longer-lived nor more public than the strictest.
package catalog

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/gateway/internal/text"
)

// Limits and defaults of names.
const (
	// MaxNameLen is the longest tool or prompt name the spec allows.
	MaxNameLen = 128
	// DefaultSeparator goes between an upstream's prefix and its names.
	DefaultSeparator = "__"
)

// ValidName reports why name is not a valid tool or prompt name: 1 to 128
// characters of [A-Za-z0-9_.-].
func ValidName(name string) error {
	if name == "" {
		return fmt.Errorf("empty name")
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("%d characters, more than %d", len(name), MaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		if !nameChar(name[i]) {
			return fmt.Errorf("character %q at offset %d is not one of [A-Za-z0-9_.-]", name[i], i)
		}
	}
	return nil
}

func nameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
}

// Naming says how one upstream's names are exposed and which are.
type Naming struct {
	// Prefix replaces the upstream's name as the prefix of its tool and
	// prompt names when the gateway has more than one upstream. Empty
	// means the upstream's name.
	Prefix string
	// Separator goes between prefix and name. Empty means "__".
	Separator string
	// Include, if not empty, exposes only the tools and prompts whose
	// upstream name matches one of these patterns (path.Match syntax:
	// "read_*", "get_?").
	Include []string
	// Exclude hides the tools and prompts whose upstream name matches one
	// of these patterns; it wins over Include.
	Exclude []string
}

// Check reports an invalid pattern, prefix or separator.
func (n Naming) Check() error {
	for _, p := range append(append([]string(nil), n.Include...), n.Exclude...) {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("pattern %q: %w", p, err)
		}
	}
	for _, s := range []string{n.Prefix, n.Separator} {
		for i := 0; i < len(s); i++ {
			if !nameChar(s[i]) {
				return fmt.Errorf("%q: character %q is not one of [A-Za-z0-9_.-]", s, s[i])
			}
		}
	}
	return nil
}

// admits reports whether the upstream's item name passes the filters.
func (n Naming) admits(name string) bool {
	for _, p := range n.Exclude {
		if ok, _ := path.Match(p, name); ok {
			return false
		}
	}
	if len(n.Include) == 0 {
		return true
	}
	for _, p := range n.Include {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// exposed returns the name clients see for the upstream's name.
func (n Naming) exposed(upstream, name string, prefixed bool) string {
	if !prefixed {
		return name
	}
	prefix, sep := n.Prefix, n.Separator
	if prefix == "" {
		prefix = upstream
	}
	if sep == "" {
		sep = DefaultSeparator
	}
	return prefix + sep + name
}

// Tool is one tool of one upstream.
type Tool struct {
	// Upstream names the upstream that serves it.
	Upstream string
	// Name is the upstream's name for it; Exposed the one clients see.
	Name, Exposed string
	// Raw is the tool as the upstream listed it.
	Raw json.RawMessage
	// Tool is the SDK's decoding of Raw: input schema, annotations, _meta.
	// Do not modify it.
	Tool *mcp.Tool
	// Resolvable reports whether the upstream serves tools/resolve for it
	// (its tool-resolution marker, or the seed's top-level resolve: true).
	Resolvable bool
}

// Prompt is one prompt of one upstream.
type Prompt struct {
	Upstream      string
	Name, Exposed string
	Raw           json.RawMessage
	Prompt        *mcp.Prompt
}

// Resource is one resource of one upstream.
type Resource struct {
	Upstream string
	// URI is the upstream's; Exposed the one clients see (set by Build).
	URI, Exposed string
	Raw          json.RawMessage
	Resource     *mcp.Resource
}

// Template is one resource template of one upstream.
type Template struct {
	Upstream string
	// URITemplate is the upstream's; Exposed the one clients see (set by
	// Build).
	URITemplate, Exposed string
	Raw                  json.RawMessage
	Template             *mcp.ResourceTemplate
	match                *regexp.Regexp // set by Build
	literal              string         // the template's text before its first expression
}

// Listing is what one upstream lists. Items without an upstream name or
// URI are ignored; items come in the upstream's order.
type Listing struct {
	// Upstream is the upstream's configured name.
	Upstream string
	Naming   Naming
	Tools    []*Tool
	Prompts  []*Prompt

	Resources []*Resource
	Templates []*Template
	// Caches of the four lists, as the upstream sent them.
	ToolsCache, PromptsCache, ResourcesCache, TemplatesCache Cache
}

// Problem is an item that is not exposed, and why.
type Problem struct {
	Upstream string `json:"upstream"`
	Kind     string `json:"kind"` // "tool", "prompt", "resource", "template"
	Name     string `json:"name"` // the upstream's name or URI
	Reason   string `json:"reason"`
}

func (p Problem) String() string {
	return fmt.Sprintf("skipped %s %q of upstream %q: %s", p.Kind, p.Name, p.Upstream, p.Reason)
}

// View is the aggregated catalog at one moment. It is immutable.
type View struct {
	// Tools, Prompts, Resources and Templates are the exposed items, in
	// configuration order of their upstreams, then in each upstream's order.
	Tools     []*Tool
	Prompts   []*Prompt
	Resources []*Resource
	Templates []*Template
	// Caches of the aggregated lists.
	ToolsCache, PromptsCache, ResourcesCache, TemplatesCache Cache
	// Problems lists what was skipped.
	Problems []Problem

	tools   map[string]*Tool
	prompts map[string]*Prompt
	uris    map[string][]*Resource // by the upstream's URI
	spaces  map[string]string      // escaped upstream name -> name, when namespaced
	order   map[string]int         // upstream -> configuration order
}

// Build aggregates listings, given in configuration order. prefixed says
// whether names get their upstream's prefix: true when the gateway has more
// than one upstream configured (whether or not each is up).
func Build(listings []*Listing, prefixed bool) *View {
	v := &View{
		tools:   map[string]*Tool{},
		prompts: map[string]*Prompt{},
	}
	var toolCaches, promptCaches, resourceCaches, templateCaches []Cache

	// Tools and prompts: name them, then drop every clash.
	type named[T any] struct {
		item    T
		exposed string
	}
	var tools []named[*Tool]
	var prompts []named[*Prompt]
	toolCount, promptCount := map[string]int{}, map[string]int{}
	for _, l := range listings {
		toolCaches = append(toolCaches, l.ToolsCache)
		promptCaches = append(promptCaches, l.PromptsCache)
		resourceCaches = append(resourceCaches, l.ResourcesCache)
		templateCaches = append(templateCaches, l.TemplatesCache)
		for _, t := range l.Tools {
			if !l.Naming.admits(t.Name) {
				continue
			}
			exp := l.Naming.exposed(l.Upstream, t.Name, prefixed)
			if err := ValidName(exp); err != nil {
				v.Problems = append(v.Problems, Problem{l.Upstream, "tool", t.Name, fmt.Sprintf("exposed name %q is invalid: %v", text.Clip(exp, 160), err)})
				continue
			}
			tools = append(tools, named[*Tool]{t, exp})
			toolCount[exp]++
		}
		for _, p := range l.Prompts {
			if !l.Naming.admits(p.Name) {
				continue
			}
			exp := l.Naming.exposed(l.Upstream, p.Name, prefixed)
			if err := ValidName(exp); err != nil {
				v.Problems = append(v.Problems, Problem{l.Upstream, "prompt", p.Name, fmt.Sprintf("exposed name %q is invalid: %v", text.Clip(exp, 160), err)})
				continue
			}
			prompts = append(prompts, named[*Prompt]{p, exp})
			promptCount[exp]++
		}
	}
	for _, n := range tools {
		if toolCount[n.exposed] > 1 {
			v.Problems = append(v.Problems, Problem{n.item.Upstream, "tool", n.item.Name, fmt.Sprintf("exposed name %q is listed %d times", n.exposed, toolCount[n.exposed])})
			continue
		}
		t := *n.item
		t.Exposed = n.exposed
		v.Tools = append(v.Tools, &t)
		v.tools[t.Exposed] = &t
	}
	for _, n := range prompts {
		if promptCount[n.exposed] > 1 {
			v.Problems = append(v.Problems, Problem{n.item.Upstream, "prompt", n.item.Name, fmt.Sprintf("exposed name %q is listed %d times", n.exposed, promptCount[n.exposed])})
			continue
		}
		p := *n.item
		p.Exposed = n.exposed
		v.Prompts = append(v.Prompts, &p)
		v.prompts[p.Exposed] = &p
	}

	v.buildResources(listings, prefixed)
	v.ToolsCache = Merge(toolCaches...)
	v.PromptsCache = Merge(promptCaches...)
	v.ResourcesCache = Merge(resourceCaches...)
	v.TemplatesCache = Merge(templateCaches...)
	return v
}

// Tool returns the exposed tool named name.
func (v *View) Tool(name string) (*Tool, bool) {
	t, ok := v.tools[name]
	return t, ok
}

// Prompt returns the exposed prompt named name.
func (v *View) Prompt(name string) (*Prompt, bool) {
	p, ok := v.prompts[name]
	return p, ok
}

// RemoveTool drops an exposed tool from v, for a caller that finds it
// unusable after Build and before it shares v.
func (v *View) RemoveTool(exposed string) {
	if _, ok := v.tools[exposed]; !ok {
		return
	}
	delete(v.tools, exposed)
	v.Tools = slices.DeleteFunc(slices.Clone(v.Tools), func(t *Tool) bool { return t.Exposed == exposed })
}
