package config

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
)

// MaxFileSize bounds a config file (an editor's file may hold much more
// than its servers).
const MaxFileSize = 16 << 20

// Load reads the config file at path, in any format [Parse] reads, with
// the process's environment, and reads the env files its servers name.
func Load(path string) (*Config, error) {
	return load(path, os.LookupEnv)
}

func load(path string, env func(string) (string, bool)) (*Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	data, err := readFile(abs, MaxFileSize)
	if err != nil {
		return nil, err
	}
	return parse(path, filepath.Dir(abs), data, env, true)
}

// readFile reads at most limit bytes of a file, and fails if there are more.
func readFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return data, nil
}

// Parse reads a config file's content: the canonical format (YAML, or the
// same in JSON), an mcpServers file as Claude Desktop, Claude Code and
// Cursor write it, or VS Code's mcp.json, told apart by their content.
// name is the file's path: it names the file in errors, and relative
// paths in the file are resolved against its directory. env looks up
// environment variables for ${...}; nil means os.LookupEnv. Parse does no
// I/O: it does not read env files (see [Load]).
//
// The problems found are returned together as [Errors].
func Parse(name string, data []byte, env func(string) (string, bool)) (*Config, error) {
	return parse(name, filepath.Dir(name), data, env, false)
}

// parse is Parse with dir as the file's directory, reading env files when
// files is set.
func parse(name, dir string, data []byte, env func(string) (string, bool), files bool) (*Config, error) {
	if env == nil {
		env = os.LookupEnv
	}
	errs := &errList{file: name}
	if len(data) > MaxFileSize {
		errs.add(pos{}, "", "larger than %d bytes", MaxFileSize)
		return nil, errs.err()
	}
	json := isJSON(name, data)
	var root *node
	if json {
		root = readJSON(data, errs)
	} else {
		root = readYAML(data, errs)
	}
	if root == nil {
		return nil, errs.err()
	}
	p := &parser{file: name, dir: dir, errs: errs, env: env, files: files}
	c := p.parse(root, json)
	if err := errs.err(); err != nil {
		return nil, err
	}
	return c, nil
}

// parser reads one file.
type parser struct {
	file    string // the file's name
	dir     string // the file's directory
	errs    *errList
	env     func(string) (string, bool)
	files   bool // read env files
	dec     *decoder
	section string // the key holding the servers: servers or mcpServers
}

func (p *parser) parse(root *node, json bool) *Config {
	f := detect(root, json)
	v := &vars{env: p.env, dir: p.dir, editor: f != formatCanonical, vscode: f == formatVSCode}
	if f == formatVSCode {
		v.inputs = p.readInputs(root.get("inputs"))
	}
	p.dec = newDecoder(p.errs, v)
	c := &Config{}
	switch f {
	case formatCanonical:
		p.section = "servers"
		if root.kind == nullNode {
			p.errs.add(root.pos, "", "the file is empty (expected a mapping with servers)")
			return nil
		}
		if root.kind != mapNode {
			p.errs.add(root.pos, "", "expected a mapping with servers, found %s", root.describe())
			return nil
		}
		// Top-level keys starting with x- are the file's own, for YAML
		// anchors that servers share.
		own := *root
		own.pairs = slices.DeleteFunc(slices.Clone(root.pairs), func(p pair) bool { return strings.HasPrefix(p.key.text, "x-") })
		p.dec.decode(&own, "", reflect.ValueOf(c).Elem(), false)
	case formatMCPServers:
		p.section = "mcpServers"
		var entries map[string]*clientServer
		p.dec.decode(root.get("mcpServers"), "mcpServers", reflect.ValueOf(&entries).Elem(), false)
		c.Servers = make(map[string]*Server, len(entries))
		for name, e := range entries {
			c.Servers[name] = e.server()
		}
	case formatVSCode:
		p.section = "servers"
		var entries map[string]*vscodeServer
		p.dec.decode(root.get("servers"), "servers", reflect.ValueOf(&entries).Elem(), false)
		c.Servers = make(map[string]*Server, len(entries))
		for name, e := range entries {
			c.Servers[name] = e.server()
		}
	}
	p.dec.seen[""] = root
	if p.errs.full() {
		return nil
	}
	p.validate(c)
	return c
}

// fail reports a problem found by validation at path, unless decoding
// already found one there.
func (p *parser) fail(path, format string, args ...any) {
	if p.dec.related(path) {
		return
	}
	p.dec.failed[path] = true
	p.errs.add(p.dec.at(path), path, format, args...)
}

// serverPath is the path of a server's key.
func (p *parser) serverPath(name, key string) string {
	path := join(p.section, name)
	if key != "" {
		path += "." + key
	}
	return path
}

// sortedKeys returns the keys of m, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
