package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/lint"
)

// exitCouldNotRun is lint's and docs' exit status when the target could
// not be reached or read.
const exitCouldNotRun = 3

// exitError ends a command with a given exit status after printing err.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func couldNotRun(err error) error { return &exitError{exitCouldNotRun, err} }

type lintCmd struct {
	target     targetFlags
	format     string
	severity   string
	config     string
	listChecks bool
}

func (c *lintCmd) synopsis() string {
	return `usage: preflight lint [flags] -url URL
       preflight lint [flags] -catalog FILE
       preflight lint [flags] -- COMMAND [ARG...]

Checks the tool metadata of an MCP server, running (over streamable HTTP
with -url, or a command started over stdio after --) or captured in a
catalog file (a tools/list result, -catalog): names, descriptions, input
schemas, annotations, the mcp.dev/ policy hints, and, on a running server,
tool resolution. For each tool marked resolvable, lint sends tools/resolve
with argument values enumerated from the input schema (enums, consts,
booleans, examples, defaults; placeholders that fit the type for the rest),
in each shape the tool is marked for, each request twice, plus arguments
that break the schema and a tool that does not exist. It never calls a tool.

Every finding names its check, its severity and the fix; "preflight lint
-list-checks" prints them all. A configuration file (-config, JSON) silences
a check for a tool, with a reason:

  {"ignore": [{"check": "no-annotations", "tool": "rename_folder",
               "reason": "asks the user for the name and to confirm"}]}

Exit status: 0 no finding at or above -severity; 1 findings at or above
-severity; 2 usage error (bad flags or configuration); 3 the target could
not be checked (connection, handshake or tools/list failed, unreadable
catalog).

Examples:

  preflight lint -url http://127.0.0.1:8080/mcp
  preflight lint -format sarif -severity warning -- go run ./examples/files -root DIR > lint.sarif
  preflight lint -catalog testdata/catalogs/github-all.json -config lint.json
`
}

func (c *lintCmd) flags(fs *flag.FlagSet) {
	c.target.bind(fs)
	fs.StringVar(&c.format, "format", "text", "output: text, json or sarif (SARIF 2.1.0)")
	fs.StringVar(&c.severity, "severity", "error", "fail (exit 1) on findings at or above this severity: error, warning or info")
	fs.StringVar(&c.config, "config", "", "configuration `file` (JSON) whose ignore entries silence a check for a tool, with a reason")
	fs.BoolVar(&c.listChecks, "list-checks", false, "print the checks (id, severity, explanation, fix) and exit; with -format json, as JSON")
}

func (c *lintCmd) run(ctx context.Context, inv invocation, stdout, stderr io.Writer) error {
	if c.listChecks {
		return writeChecks(stdout, c.format)
	}
	min, err := lint.ParseSeverity(c.severity)
	if err != nil {
		return usagef("-severity: %v", err)
	}
	switch c.format {
	case "text", "json", "sarif":
	default:
		return usagef("-format %q: want text, json or sarif", c.format)
	}
	var cfg *lint.Config
	if c.config != "" {
		if cfg, err = lint.LoadConfig(c.config); err != nil {
			return usagef("-config: %v", err)
		}
	}
	if err := c.target.check(inv); err != nil {
		return err
	}
	t, err := c.target.observe(ctx, inv, &lint.ProbeOptions{Determinism: true, Invalid: true}, stderr)
	if err != nil {
		return err
	}
	r := lint.Run(t, cfg)
	switch c.format {
	case "json":
		err = r.WriteJSON(stdout, min)
	case "sarif":
		err = r.WriteSARIF(stdout, version)
	default:
		err = r.WriteText(stdout, min)
	}
	if err != nil {
		return err
	}
	if r.Count(min) > 0 {
		return errReported
	}
	return nil
}

// writeChecks prints the checks.
func writeChecks(w io.Writer, format string) error {
	if format == "json" {
		return writeJSON(w, lint.Checks)
	}
	for _, c := range lint.Checks {
		scope := "tools/list"
		if c.Live {
			scope = "running server"
		}
		fmt.Fprintf(w, "%s (%s, %s)\n  %s\n  fix: %s\n", c.ID, c.Severity, scope, c.Explanation, c.Fix)
	}
	return nil
}

// targetFlags name what lint and docs look at: a URL, a command after
// "--", or a catalog file.
type targetFlags struct {
	url         string
	catalog     string
	era         string
	headers     headerFlag
	timeout     time.Duration
	maxVariants int
}

func (f *targetFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "url", "", "streamable HTTP endpoint of a running server, such as http://127.0.0.1:8080/mcp")
	fs.StringVar(&f.catalog, "catalog", "", "a catalog `file`: a tools/list result as JSON ({\"tools\": [...]}, as in testdata/catalogs)")
	fs.StringVar(&f.era, "era", "", "protocol version to ask for: "+preflight.ProtocolStateless+" or "+preflight.ProtocolLegacy+" (default: the newest the server speaks)")
	fs.Var(&f.headers, "header", "HTTP header `Name: value` sent with every request (repeatable; -url only)")
	fs.DurationVar(&f.timeout, "timeout", 2*time.Minute, "give up after this long; 0 waits forever")
	fs.IntVar(&f.maxVariants, "max-variants", lint.DefaultMaxVariants, "at most this many argument variants resolved per tool")
}

// check reports a bad combination of targets as a usage error.
func (f *targetFlags) check(inv invocation) error {
	n := 0
	for _, set := range []bool{f.url != "", f.catalog != "", inv.dashDash} {
		if set {
			n++
		}
	}
	switch {
	case len(inv.args) > 0:
		return usagef("unexpected arguments %q (a command to start goes after --)", inv.args)
	case n == 0:
		return usagef("nothing to check: give -url URL, -catalog FILE, or a command to start after --")
	case n > 1:
		return usagef("give exactly one of -url, -catalog and a command after --")
	case inv.dashDash && len(inv.rest) == 0:
		return usagef("no command after --")
	case f.url == "" && len(f.headers) > 0:
		return usagef("-header applies to -url only")
	case f.era != "" && f.era != preflight.ProtocolStateless && f.era != preflight.ProtocolLegacy:
		return usagef("-era %q: want %s or %s", f.era, preflight.ProtocolStateless, preflight.ProtocolLegacy)
	case f.maxVariants < 1:
		return usagef("-max-variants must be at least 1")
	}
	return nil
}

// observe reads the catalog, or connects to the server twice (once
// declaring the tool-resolution extension, once declaring nothing, for the
// seed shape) and observes it. Failures are could-not-run errors.
func (f *targetFlags) observe(ctx context.Context, inv invocation, opts *lint.ProbeOptions, stderr io.Writer) (*lint.Target, error) {
	if f.catalog != "" {
		t, err := lint.ReadCatalog(f.catalog)
		if err != nil {
			return nil, couldNotRun(err)
		}
		return t, nil
	}
	if _, isFile := stderr.(*os.File); !isFile {
		stderr = &syncWriter{w: stderr}
	}
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	source := f.url
	if source == "" {
		source = strings.Join(inv.rest, " ")
	}
	ext, closeExt, err := f.tappedSession(ctx, inv, true, stderr)
	if err != nil {
		return nil, couldNotRun(err)
	}
	defer closeExt()
	seed, closeSeed, err := f.tappedSession(ctx, inv, false, stderr)
	if err != nil {
		return nil, couldNotRun(err)
	}
	defer closeSeed()
	o := *opts
	o.MaxVariants = f.maxVariants
	t, err := lint.Observe(ctx, source, ext, seed, &o)
	if err != nil {
		return nil, couldNotRun(err)
	}
	return t, nil
}

// tappedSession connects a client that records the raw results lint
// needs. extension says whether it declares the tool-resolution extension.
func (f *targetFlags) tappedSession(ctx context.Context, inv invocation, extension bool, stderr io.Writer) (*tappedSession, func(), error) {
	var opts *mcp.ClientOptions
	if extension {
		caps := &mcp.ClientCapabilities{}
		caps.AddExtension(preflight.ExtensionToolResolution, nil)
		caps.AddExtension(preflight.MetaPolicyHints, nil)
		opts = &mcp.ClientOptions{Capabilities: caps}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "preflight-lint", Version: version}, opts)
	if err := mcp.AddSendingCustomMethod[*preflight.ResolveParams, *rawResult](client, preflight.MethodResolve); err != nil {
		return nil, nil, err
	}
	tap := newWireTap()
	cs, closeSession, err := dial(ctx, client, dialOptions{
		url: f.url, headers: f.headers, command: inv.rest, era: f.era,
		wrapHTTP:  func(rt http.RoundTripper) http.RoundTripper { return &tapRoundTripper{rt, tap} },
		wrapStdio: func(t mcp.Transport) mcp.Transport { return &tapTransport{t, tap} },
	}, stderr)
	if err != nil {
		return nil, nil, err
	}
	s := &tappedSession{cs: cs, tap: tap}
	if r := tap.take("server/discover"); len(r) > 0 {
		s.init = r[len(r)-1]
	} else if r := tap.take("initialize"); len(r) > 0 {
		s.init = r[len(r)-1]
	} else if res := cs.InitializeResult(); res != nil {
		s.init, _ = json.Marshal(res) // the SDK's view: no seed fields
	}
	// server/discover carries neither the negotiated version nor, at its
	// top level, the server's name: take them from the SDK's view.
	var m map[string]any
	if json.Unmarshal(s.init, &m) == nil && m != nil {
		if res := cs.InitializeResult(); res != nil {
			if _, ok := m["protocolVersion"]; !ok {
				m["protocolVersion"] = res.ProtocolVersion
			}
			if _, ok := m["serverInfo"]; !ok && res.ServerInfo != nil {
				m["serverInfo"] = res.ServerInfo
			}
		}
		s.init, _ = json.Marshal(m)
	}
	return s, closeSession, nil
}

// tappedSession is a [lint.Session] on an SDK client session whose raw
// results a wire tap records.
type tappedSession struct {
	cs   *mcp.ClientSession
	tap  *wireTap
	init json.RawMessage
}

func (s *tappedSession) InitializeResult() json.RawMessage { return s.init }

func (s *tappedSession) ListTools(ctx context.Context) ([]json.RawMessage, error) {
	var pages []json.RawMessage
	params := &mcp.ListToolsParams{}
	for range 1000 {
		res, err := s.cs.ListTools(ctx, params)
		if err != nil {
			return nil, err
		}
		raw := s.tap.take("tools/list")
		if len(raw) == 0 {
			// Not seen on the wire (a cached page): the SDK's view.
			b, err := json.Marshal(res)
			if err != nil {
				return nil, err
			}
			raw = []json.RawMessage{b}
		}
		pages = append(pages, raw[len(raw)-1])
		if res.NextCursor == "" {
			return pages, nil
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
	return nil, errors.New("tools/list: more than 1000 pages")
}

func (s *tappedSession) Resolve(ctx context.Context, name string, args map[string]any) (json.RawMessage, error) {
	res, err := mcp.CallCustomMethod[*preflight.ResolveParams, *rawResult](ctx, s.cs, preflight.MethodResolve,
		&preflight.ResolveParams{Name: name, Arguments: args})
	if err != nil {
		return nil, err
	}
	return res.raw, nil
}

// rawResult keeps a result as received.
type rawResult struct {
	mcp.ResultBase
	raw json.RawMessage
}

func (r *rawResult) UnmarshalJSON(b []byte) error {
	r.raw = append(json.RawMessage(nil), b...)
	return nil
}

// wireTap records the raw results of requests by method, matching
// responses to requests by id.
type wireTap struct {
	mu      sync.Mutex
	methods map[string]string
	results map[string][]json.RawMessage
}

func newWireTap() *wireTap {
	return &wireTap{methods: map[string]string{}, results: map[string][]json.RawMessage{}}
}

// idKey normalises a JSON-RPC id: numbers and strings never collide.
func idKey(id any) string {
	switch v := id.(type) {
	case string:
		return "s:" + v
	case nil:
		return ""
	}
	return fmt.Sprintf("n:%v", id)
}

func (t *wireTap) request(id any, method string) {
	if k := idKey(id); k != "" {
		t.mu.Lock()
		t.methods[k] = method
		t.mu.Unlock()
	}
}

func (t *wireTap) response(id any, result json.RawMessage) {
	k := idKey(id)
	t.mu.Lock()
	defer t.mu.Unlock()
	if m, ok := t.methods[k]; ok && result != nil {
		delete(t.methods, k)
		t.results[m] = append(t.results[m], append(json.RawMessage(nil), result...))
	}
}

// take returns and forgets the results recorded for method.
func (t *wireTap) take(method string) []json.RawMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.results[method]
	delete(t.results, method)
	return r
}

// wireMessage is a JSON-RPC message as the HTTP tap reads it.
type wireMessage struct {
	ID     any             `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
}

// messages decodes one message or a batch.
func messages(b []byte) []wireMessage {
	b = bytes.TrimSpace(b)
	dec := func(b []byte, v any) error {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		return d.Decode(v)
	}
	if len(b) > 0 && b[0] == '[' {
		var batch []wireMessage
		if dec(b, &batch) == nil {
			return batch
		}
		return nil
	}
	var m wireMessage
	if dec(b, &m) != nil {
		return nil
	}
	return []wireMessage{m}
}

// tapRoundTripper records the JSON-RPC requests and results that cross
// streamable HTTP (JSON and event-stream replies alike). Wrapping the
// transport's connection instead would hide the SDK's session state from
// it.
type tapRoundTripper struct {
	base http.RoundTripper
	tap  *wireTap
}

func (t *tapRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && req.Body != nil {
		var b []byte
		if req.GetBody != nil {
			if body, err := req.GetBody(); err == nil {
				b, _ = io.ReadAll(body)
				body.Close()
			}
		} else {
			var err error
			if b, err = io.ReadAll(req.Body); err != nil {
				return nil, err
			}
			req.Body.Close()
			req = req.Clone(req.Context())
			req.Body = io.NopCloser(bytes.NewReader(b))
		}
		for _, m := range messages(b) {
			if m.Method != "" && m.ID != nil {
				t.tap.request(m.ID, m.Method)
			}
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost {
		return resp, err
	}
	ct := resp.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "text/event-stream"):
		resp.Body = &tapBody{ReadCloser: resp.Body, tap: t.tap, sse: true}
	case strings.HasPrefix(ct, "application/json"):
		resp.Body = &tapBody{ReadCloser: resp.Body, tap: t.tap}
	}
	return resp, nil
}

// tapBody records the messages of a reply as the SDK reads it.
type tapBody struct {
	io.ReadCloser
	tap  *wireTap
	sse  bool
	buf  []byte
	data []byte // the current event's data
	done bool
}

func (b *tapBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.buf = append(b.buf, p[:n]...)
	if b.sse {
		for {
			i := bytes.IndexByte(b.buf, '\n')
			if i < 0 {
				break
			}
			line := bytes.TrimRight(b.buf[:i], "\r")
			b.buf = b.buf[i+1:]
			switch {
			case len(line) == 0:
				b.dispatch(b.data)
				b.data = nil
			case bytes.HasPrefix(line, []byte("data:")):
				d := bytes.TrimPrefix(line[5:], []byte(" "))
				if b.data != nil {
					b.data = append(b.data, '\n')
				}
				b.data = append(b.data, d...)
			}
		}
	} else if err == io.EOF {
		b.flush()
	}
	return n, err
}

func (b *tapBody) Close() error {
	if !b.sse {
		b.flush()
	}
	return b.ReadCloser.Close()
}

func (b *tapBody) flush() {
	if !b.done {
		b.done = true
		b.dispatch(b.buf)
	}
}

func (b *tapBody) dispatch(data []byte) {
	for _, m := range messages(data) {
		if m.Method == "" && m.ID != nil {
			b.tap.response(m.ID, m.Result)
		}
	}
}

// tapTransport records the JSON-RPC requests and results of a stdio
// connection.
type tapTransport struct {
	inner mcp.Transport
	tap   *wireTap
}

func (t *tapTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &tapConn{Connection: c, tap: t.tap}, nil
}

type tapConn struct {
	mcp.Connection
	tap *wireTap
}

func (c *tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if r, ok := msg.(*jsonrpc.Response); ok && err == nil && r.Error == nil && r.ID.IsValid() {
		c.tap.response(r.ID.Raw(), r.Result)
	}
	return msg, err
}

func (c *tapConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if r, ok := msg.(*jsonrpc.Request); ok && r.ID.IsValid() {
		c.tap.request(r.ID.Raw(), r.Method)
	}
	return c.Connection.Write(ctx, msg)
}
