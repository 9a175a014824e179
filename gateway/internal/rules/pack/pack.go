// Package pack holds the rules shipped with the project for popular MCP
// servers whose tools switch behaviour on an argument or a path: the
// GitHub server's method and action tools, the filesystem, memory and
// everything reference servers, and the browser automation servers
// (Playwright, Puppeteer). Each pack is a YAML file embedded in the binary,
// written for one server's real catalog and tested against it.
//
// A pack's rules go into [rules.Server.Pack] of the upstream that runs
// that server: they apply after the deployer's rules and the upstream's
// own tools/resolve, and a tool the rules do not cover keeps its static
// declaration.
package pack

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/preflightmcp/preflight/gateway/internal/rules"
	"go.yaml.in/yaml/v4"
)

//go:embed *.yaml
var files embed.FS

// Pack is one server's rules as the YAML file states them.
type Pack struct {
	// Name is the pack's name, the file's name without .yaml.
	Name string `json:"pack"`
	// Servers are the serverInfo.name values of the server the pack is
	// written for; empty when the server's own name is not known.
	Servers []string `json:"servers,omitempty"`
	// Source is the server the pack was written against and the catalog
	// its tests read.
	Source string `json:"source"`
	// Tools are the rules of each tool, in the order they are tried.
	Tools []Tool `json:"tools"`
}

// Tool is the rules of one tool.
type Tool struct {
	Tool string `json:"tool"`
	// Switch names the argument whose value selects the tool's behaviour,
	// when there is one: its values are what the tests enumerate.
	Switch string `json:"switch,omitempty"`
	// Values are the values of a switching argument whose schema has no
	// enum, as the tool's description names them; empty otherwise.
	Values []string `json:"values,omitempty"`
	Rules  []Rule   `json:"rules"`
}

// Rule is a [rules.Rule] for one tool; its full name is
// pack/tool/name.
type Rule struct {
	Name        string                `json:"name"`
	When        string                `json:"when,omitempty"`
	Annotations rules.AnnotationPatch `json:"annotations,omitzero"`
	Hints       rules.HintPatch       `json:"hints,omitzero"`
	Why         string                `json:"why"`
}

// Rules returns the pack's rules, ready for [rules.Server.Pack].
func (p *Pack) Rules() []rules.Rule {
	var out []rules.Rule
	for _, t := range p.Tools {
		for _, r := range t.Rules {
			out = append(out, rules.Rule{
				Name:        p.Name + "/" + t.Tool + "/" + r.Name,
				Tools:       []string{t.Tool},
				When:        r.When,
				Annotations: r.Annotations,
				Hints:       r.Hints,
				Why:         r.Why,
			})
		}
	}
	return out
}

// Switch returns the switching argument of tool, "" when it has none or
// the pack does not cover it.
func (p *Pack) Switch(tool string) string {
	for _, t := range p.Tools {
		if t.Tool == tool {
			return t.Switch
		}
	}
	return ""
}

// loadAll parses every embedded pack once.
var loadAll = sync.OnceValues(func() (map[string]*Pack, error) {
	entries, err := files.ReadDir(".")
	if err != nil {
		return nil, err
	}
	out := make(map[string]*Pack, len(entries))
	for _, e := range entries {
		name := strings.TrimSuffix(path.Base(e.Name()), ".yaml")
		p, err := load(name)
		if err != nil {
			return nil, err
		}
		out[name] = p
	}
	return out, nil
})

func load(name string) (*Pack, error) {
	b, err := files.ReadFile(name + ".yaml")
	if err != nil {
		return nil, err
	}
	p, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", name, err)
	}
	if p.Name != name {
		return nil, fmt.Errorf("pack %s: names itself %q", name, p.Name)
	}
	return p, nil
}

// Parse reads a pack file. Unknown keys are errors, and every rule must
// have a name and say why. The YAML is read as JSON is, by the types' json
// tags: the rules' patches are the ones of the gateway's configuration.
func Parse(data []byte) (*Pack, error) {
	var doc any
	if err := yaml.Load(data, &doc); err != nil {
		return nil, err
	}
	js, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("not a pack: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	var p Pack
	if err := dec.Decode(&p); err != nil {
		return nil, err
	}
	if p.Name == "" {
		return nil, fmt.Errorf("no pack name")
	}
	seen := make(map[string]bool)
	for i, t := range p.Tools {
		if t.Tool == "" {
			return nil, fmt.Errorf("tools[%d]: no tool name", i)
		}
		if seen[t.Tool] {
			return nil, fmt.Errorf("tool %q: listed twice", t.Tool)
		}
		seen[t.Tool] = true
		if len(t.Rules) == 0 {
			return nil, fmt.Errorf("tool %q: no rules", t.Tool)
		}
		for j, r := range t.Rules {
			if r.Name == "" {
				return nil, fmt.Errorf("tool %q: rules[%d]: no name", t.Tool, j)
			}
			if r.Why == "" {
				return nil, fmt.Errorf("tool %q: rule %q: no why", t.Tool, r.Name)
			}
		}
	}
	return &p, nil
}

// Names lists the packs, sorted.
func Names() []string {
	all, err := loadAll()
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Get returns the pack called name, a copy of its own.
func Get(name string) (*Pack, error) {
	all, err := loadAll()
	if err != nil {
		return nil, err
	}
	if _, ok := all[name]; !ok {
		return nil, fmt.Errorf("no rules pack %q (packs: %s)", name, strings.Join(Names(), ", "))
	}
	return load(name)
}

// Rules returns the rules of the named packs, in order.
func Rules(names ...string) ([]rules.Rule, error) {
	var out []rules.Rule
	for _, n := range names {
		p, err := Get(n)
		if err != nil {
			return nil, err
		}
		out = append(out, p.Rules()...)
	}
	return out, nil
}

// Detect returns the pack written for the server whose serverInfo.name is
// name. Apply it only to trusted upstreams: any server can call itself by
// any name.
func Detect(serverName string) (string, bool) {
	all, err := loadAll()
	if err != nil {
		return "", false
	}
	for _, n := range Names() {
		if slices.Contains(all[n].Servers, serverName) {
			return n, true
		}
	}
	return "", false
}
