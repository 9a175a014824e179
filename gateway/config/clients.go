package config

import "reflect"

// The files editors and desktop clients write, read as they are.

// format is the kind of file being read.
type format int

const (
	formatCanonical  format = iota
	formatMCPServers        // "mcpServers": Claude Desktop, Claude Code, Cursor
	formatVSCode            // "servers" (+ "inputs"): VS Code's mcp.json
)

// detect tells the format of a file from its top level: a mapping with
// mcpServers is an editor's file (its other keys are the editor's and are
// ignored); a JSON file whose top level holds only servers and inputs is
// VS Code's; anything else is the canonical format.
func detect(root *node, json bool) format {
	if root.kind != mapNode {
		return formatCanonical
	}
	if root.get("mcpServers") != nil {
		return formatMCPServers
	}
	if !json || root.get("servers") == nil {
		return formatCanonical
	}
	for _, p := range root.pairs {
		if p.key.text != "servers" && p.key.text != "inputs" {
			return formatCanonical
		}
	}
	return formatVSCode
}

// clientServer is a server entry of an mcpServers file: command, args and
// env as Claude Desktop writes them; type, url and headers as Claude Code
// adds; envFile and cwd as Cursor and Claude Code accept.
type clientServer struct {
	Type    clientTransport   `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args" config:"text"`
	Env     map[string]string `json:"env" config:"text"`
	EnvFile string            `json:"envFile"`
	Cwd     string            `json:"cwd"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers" config:"text"`
}

// vscodeServer is a server entry of VS Code's mcp.json.
type vscodeServer struct {
	Type    clientTransport   `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args" config:"text"`
	Env     map[string]string `json:"env" config:"text"`
	EnvFile string            `json:"envFile"`
	Cwd     string            `json:"cwd"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers" config:"text"`
	// Dev configures VS Code's watch-and-debug mode for developing a
	// server; it has no meaning for the gateway and is ignored.
	Dev ignored `json:"dev"`
}

// clientTransport is the type of an editor's entry; "streamable-http"
// and "streamableHttp" are other names of http some editors use.
type clientTransport string

func (t clientTransport) transport() Transport {
	switch t {
	case "streamable-http", "streamableHttp":
		return TransportHTTP
	}
	return Transport(t)
}

// ignored accepts any value and keeps none.
type ignored struct{}

var (
	clientTransportType = reflect.TypeFor[clientTransport]()
	ignoredType         = reflect.TypeFor[ignored]()
)

func (s *clientServer) server() *Server {
	return &Server{Type: s.Type.transport(), Command: s.Command, Args: s.Args, Env: s.Env, EnvFile: s.EnvFile,
		Cwd: s.Cwd, URL: s.URL, Headers: s.Headers}
}

func (s *vscodeServer) server() *Server {
	return (&clientServer{s.Type, s.Command, s.Args, s.Env, s.EnvFile, s.Cwd, s.URL, s.Headers}).server()
}

// readInputs reads the ids and defaults of VS Code's inputs; the rest of
// each input (prompt text, options) is VS Code's.
func (p *parser) readInputs(n *node) map[string]input {
	inputs := map[string]input{}
	if n == nil || n.kind == nullNode {
		return inputs
	}
	if n.kind != seqNode {
		p.errs.add(n.pos, "inputs", "expected a list, found %s", n.describe())
		return inputs
	}
	for i, item := range n.items {
		path := index("inputs", i)
		id := item.get("id")
		if item.kind != mapNode || id == nil || id.kind != scalarNode || id.tag != "str" || id.text == "" {
			p.errs.add(item.pos, path, "expected an input with a string id")
			continue
		}
		in := input{}
		if def := item.get("default"); def != nil && def.kind == scalarNode {
			in = input{def: def.text, hasDef: true}
		}
		inputs[id.text] = in
	}
	return inputs
}
