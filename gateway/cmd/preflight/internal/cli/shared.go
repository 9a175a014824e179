package cli

// The helpers the commands share: formatting, the one sanitizer of text
// output, reaching a server and saying why it failed, the one catalog
// reader, the tool_descriptions resource, and observing a server for lint
// and docs.

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/disclose"
	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/lint"
	"github.com/preflightmcp/preflight/policy"
	"github.com/preflightmcp/preflight/resolve"
)

// flagsLegend explains the notation of [annFlags].
const flagsLegend = "ro readOnlyHint, d destructiveHint, i idempotentHint, ow openWorldHint; - means false"

// annFlags writes the four annotations in fixed slots, a flag when true
// and dashes when false: "ro - i --" is read-only and idempotent. A
// read-only tool is never destructive (destructiveHint means something
// only when readOnlyHint is false, and defaults to true when unset).
func annFlags(a preflight.Annotations) string {
	slot := func(on bool, flag string) string {
		if on {
			return flag
		}
		return strings.Repeat("-", len(flag))
	}
	return strings.Join([]string{
		slot(a.ReadOnlyHint, "ro"),
		slot(a.DestructiveHint && !a.ReadOnlyHint, "d"),
		slot(a.IdempotentHint, "i"),
		slot(a.OpenWorldHint, "ow"),
	}, " ")
}

// hintsText writes the hints that are set, "-" if none.
func hintsText(h hints.Hints) string {
	var parts []string
	if h.Effect != "" {
		parts = append(parts, "effect="+string(h.Effect))
	}
	if h.Idempotent != nil {
		parts = append(parts, fmt.Sprintf("idempotent=%t", *h.Idempotent))
	}
	if h.RequiresConfirmation != nil {
		parts = append(parts, fmt.Sprintf("confirm=%t", *h.RequiresConfirmation))
	}
	if h.ResultSensitivity != "" {
		parts = append(parts, "sensitivity="+string(h.ResultSensitivity))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// shorten returns the first line of s on one line (see [text.OneLine]), cut to
// at most n runes, [text.Ellipsis] included.
func shorten(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i]) + " " + text.Ellipsis
	}
	s = text.OneLine(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return text.ClipRunes(s, n-1)
}

// wrap fills text into lines of at most width columns.
func wrap(text string, width int) string {
	var b strings.Builder
	col := 0
	for _, w := range strings.Fields(text) {
		switch {
		case col == 0:
		case col+1+len(w) > width:
			b.WriteByte('\n')
			col = 0
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(w)
		col += len(w)
	}
	b.WriteByte('\n')
	return b.String()
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// compactJSON is v in one line, for echoing arguments.
func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// contentText is the text of a tool result: text contents joined, other
// contents described, structured content when there is nothing else.
func contentText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link %s]", c.URI))
		case *mcp.EmbeddedResource:
			uri := ""
			if c.Resource != nil {
				uri = c.Resource.URI
			}
			parts = append(parts, fmt.Sprintf("[embedded resource %s]", uri))
		default:
			parts = append(parts, fmt.Sprintf("[%T]", c))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		return compactJSON(res.StructuredContent)
	}
	return strings.Join(parts, "\n")
}

// rpcError is a JSON-RPC error as the command reports it.
type rpcError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
	// Hint says what to do about it.
	Hint string `json:"hint,omitempty"`
}

// codeRejectedByTransport is the Go SDK's own code for a request its
// transport could not deliver (the network error is wrapped beside it);
// no server sends it.
const codeRejectedByTransport = -32005

// rpcErrorOf returns the JSON-RPC error in err, answered to method, or
// nil if err is not one (a transport failure, say).
func rpcErrorOf(err error, method string) *rpcError {
	var e *rpcError
	var we *jsonrpc.Error
	switch {
	case errors.As(err, &we) && we.Code != codeRejectedByTransport:
		e = &rpcError{Code: we.Code, Message: we.Message, Data: we.Data}
	default:
		return nil
	}
	e.Hint = hintFor(e.Code, method)
	return e
}

// hintFor says what to do about a JSON-RPC error code answered to method.
func hintFor(code int64, method string) string {
	resolving := method == preflight.MethodResolve
	switch code {
	case preflight.CodeMethodNotFound:
		if resolving {
			return "the server does not implement tools/resolve: the static annotations from tools/list apply"
		}
		return "the server does not implement " + method
	case preflight.CodeInvalidParams:
		if resolving {
			return "fix the arguments or the tool name: do not call the tool with these arguments unchanged (and resolve only tools that tools/list marks resolvable)"
		}
		return "fix the arguments or the tool name (see the tool's input schema in tools/list)"
	case preflight.CodeInternalError:
		if resolving {
			return "the server could not resolve this call: use the static annotations from tools/list, or abort"
		}
		return "the server failed; try again later or report it to the server's authors"
	case preflight.CodeMissingCapability:
		return "the server needs a client capability this request did not declare (see data); for tool resolution, try -shape extension"
	case -32022:
		return "the server does not support this protocol version (see data); choose another with -era"
	case -32020:
		return "the request's MCP headers and body disagree; this is a client bug"
	}
	return ""
}

// writeRPCError writes e for a person.
func writeRPCError(w io.Writer, method string, e *rpcError) {
	fmt.Fprintf(w, "%s: error %d: %s\n", method, e.Code, text.OneLine(e.Message))
	if len(e.Data) > 0 {
		fmt.Fprintf(w, "  data: %s\n", text.OneLine(string(e.Data)))
	}
	if e.Hint != "" {
		fmt.Fprintf(w, "  hint: %s\n", e.Hint)
	}
}

// decisionView is a [resolve.Decision] for JSON output.
type decisionView struct {
	Resolved          bool                       `json:"resolved"`
	Shape             string                     `json:"shape,omitempty"`
	Fallback          string                     `json:"fallback,omitempty"`
	Effective         policy.Effective           `json:"effective"`
	NeedsConfirmation bool                       `json:"needsConfirmation"`
	SafeToRetry       bool                       `json:"safeToRetry"`
	SecuritySchemes   []preflight.SecurityScheme `json:"securitySchemes,omitempty"`
}

func viewDecision(d *resolve.Decision) *decisionView {
	if d == nil {
		return nil
	}
	v := &decisionView{
		Resolved:          d.Resolved,
		Shape:             d.Shape,
		Effective:         d.Effective,
		NeedsConfirmation: d.NeedsConfirmation(),
		SafeToRetry:       d.SafeToRetry(),
		SecuritySchemes:   d.SecuritySchemes,
	}
	if d.Fallback != nil {
		v.Fallback = d.Fallback.Error()
	}
	return v
}

// staticEffective is what a client knows of a call of t from tools/list
// alone.
func staticEffective(t *mcp.Tool) policy.Effective {
	h, _ := hints.Read(t.Meta)
	return policy.Evaluate(policy.Input{Static: t.Annotations, StaticHints: h})
}

// origin says in words where a decision's values came from.
func origin(d *resolve.Decision) string {
	switch {
	case d.Resolved:
		return "resolved, " + d.Shape + " shape"
	case d.Fallback != nil:
		if e := rpcErrorOf(d.Fallback, preflight.MethodResolve); e != nil {
			return fmt.Sprintf("static: resolution failed with error %d: %s", e.Code, text.OneLine(e.Message))
		}
		return "static: resolution failed: " + errText(d.Fallback)
	}
	return "static: not resolved"
}

// Text output: one sanitizer for everything a server says.

// escapeUnsafe returns a line of JSON with the [text.Invisible] characters
// ([text.Sanitize] removes them) written as JSON \u escapes: the same JSON
// values, harmless on a terminal. (The encoder already escapes C0
// controls; C1 controls, DEL, format characters and line separators are
// valid JSON as they are.)
func escapeUnsafe(s string) string {
	if text.Plain(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\t', r == '\n', r == '\r':
			b.WriteRune(r)
		case text.Invisible(r) && r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		case text.Invisible(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// outputMode says how a [termWriter] makes output safe.
type outputMode int

const (
	textOutput outputMode = iota // lines go through text.Sanitize
	jsonOutput                   // lines go through escapeUnsafe
)

// maxLine bounds the bytes a termWriter holds while waiting for a newline.
const maxLine = 64 << 10

// termWriter writes to w a line at a time, made safe for a terminal by
// [text.Sanitize] (or [escapeUnsafe] for JSON). It is safe for concurrent use.
// Flush writes a last line without its newline.
type termWriter struct {
	mu   sync.Mutex
	w    io.Writer
	mode outputMode
	buf  []byte
	err  error
}

func newTermWriter(w io.Writer, mode outputMode) *termWriter {
	return &termWriter{w: w, mode: mode}
}

func (t *termWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	start := 0
	for {
		i := bytes.IndexByte(t.buf[start:], '\n')
		if i < 0 {
			break
		}
		t.emit(t.buf[start : start+i+1])
		start += i + 1
	}
	if len(t.buf)-start > maxLine {
		t.emit(t.buf[start:])
		start = len(t.buf)
	}
	t.buf = t.buf[:copy(t.buf, t.buf[start:])]
	return len(p), t.err
}

// Flush writes what is held.
func (t *termWriter) Flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.buf) > 0 {
		t.emit(t.buf)
		t.buf = t.buf[:0]
	}
	return t.err
}

func (t *termWriter) emit(line []byte) {
	if t.err != nil {
		return
	}
	s := string(line)
	if t.mode == jsonOutput {
		s = escapeUnsafe(s)
	} else {
		s = text.Sanitize(s)
	}
	_, t.err = io.WriteString(t.w, s)
}

// Servers: how to reach one, and what to say when that fails.

// serverFlags say how to reach a server: -url (with -header) or a command
// after "--", and the protocol version to ask for.
type serverFlags struct {
	url     string
	headers headerFlag
	era     string
}

func (f *serverFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "url", "", "streamable HTTP endpoint of the server, such as http://127.0.0.1:8080/mcp")
	fs.Var(&f.headers, "header", "HTTP header `Name: value` sent with every request, such as an Authorization header\n(repeatable; -url only)")
	fs.StringVar(&f.era, "era", "", "protocol version to ask for: "+preflight.ProtocolStateless+" or "+preflight.ProtocolLegacy+
		"\n(default: the newest the server speaks)")
}

// server reports whether the command line names a server.
func (f *serverFlags) server(inv invocation) bool { return f.url != "" || inv.dashDash }

// source names the server: its URL or its command line.
func (f *serverFlags) source(inv invocation) string {
	if f.url != "" {
		return f.url
	}
	return strings.Join(inv.rest, " ")
}

// check reports a bad server or catalog on the command line. catalogs is
// how many catalog files the command reads instead of a server; -1 means
// the positional arguments are not catalogs and a server is required.
func (f *serverFlags) check(inv invocation, catalogs int) error {
	server := f.server(inv)
	switch {
	case f.url != "" && inv.dashDash:
		return usagef("give either -url or a command after --, not both")
	case inv.dashDash && len(inv.rest) == 0:
		return usagef("no command after --")
	case f.url == "" && len(f.headers) > 0:
		return usagef("-header applies to -url only")
	case f.era != "" && f.era != preflight.ProtocolStateless && f.era != preflight.ProtocolLegacy:
		return usagef("-era %q: want %s or %s", f.era, preflight.ProtocolStateless, preflight.ProtocolLegacy)
	case catalogs < 0 && !server:
		return usagef("no server: give -url URL, or a command to start after --")
	case catalogs < 0:
		return nil
	case server && len(inv.args) > 0:
		return usagef("give catalog files or a server (-url, or a command after --), not both (a command's arguments go after --)")
	case !server && len(inv.args) == 0:
		return usagef("nothing to read: give a catalog file, -url URL, or a command to start after --")
	case len(inv.args) > catalogs:
		return usagef("one catalog file at a time, got %d: %s", len(inv.args), strings.Join(inv.args, " "))
	}
	return nil
}

// headerFlag collects -header values.
type headerFlag []string

func (h *headerFlag) String() string { return strings.Join(*h, ", ") }

func (h *headerFlag) Set(v string) error {
	name, _, ok := strings.Cut(v, ":")
	if name = strings.TrimSpace(name); !ok || name == "" || strings.ContainsAny(name, " \t") {
		return fmt.Errorf("want Name: value, got %q", v)
	}
	*h = append(*h, v)
	return nil
}

// dialHooks let a command see the raw traffic of a connection.
type dialHooks struct {
	// http, if set, wraps the HTTP round tripper of a URL.
	http func(http.RoundTripper) http.RoundTripper
	// stdio, if set, wraps the transport of a command.
	stdio func(mcp.Transport) mcp.Transport
}

// stopDelay bounds how long a started server may keep its output open
// after it was told to stop (a "go run" wrapper's child, say).
const stopDelay = 2 * time.Second

// dial connects client to the server the command line names, starting
// the command after "--" once; its stderr goes to stderr. close ends the
// session and the command. A failure is a could-not-run error that says
// what failed: "connection refused", "no such host", a TLS handshake, an
// HTTP status, a command that was not found or exited.
func (f *serverFlags) dial(ctx context.Context, client *mcp.Client, inv invocation, stderr io.Writer, hooks *dialHooks) (*mcp.ClientSession, func(), error) {
	if hooks == nil {
		hooks = &dialHooks{}
	}
	var (
		t       mcp.Transport
		cleanup = func() {}
		status  *statusRecorder
		cmd     *exec.Cmd
	)
	if f.url != "" {
		base := http.DefaultTransport.(*http.Transport).Clone()
		status = &statusRecorder{base: base}
		var rt http.RoundTripper = status
		if len(f.headers) > 0 {
			rt = headerTransport{rt, f.headers}
		}
		if hooks.http != nil {
			rt = hooks.http(rt)
		}
		t = &mcp.StreamableClientTransport{Endpoint: f.url, HTTPClient: &http.Client{Transport: rt}}
		cleanup = base.CloseIdleConnections
	} else {
		cmd = exec.CommandContext(ctx, inv.rest[0], inv.rest[1:]...)
		cmd.Stderr = stderr // the server's logs, sanitized like the rest
		cmd.WaitDelay = stopDelay
		t = &mcp.CommandTransport{Command: cmd}
		if hooks.stdio != nil {
			t = hooks.stdio(t)
		}
	}
	cs, err := client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: f.era})
	if err != nil {
		cleanup()
		return nil, nil, couldNotRun(fmt.Errorf("connect to %s: %s", f.source(inv), connectProblem(err, status, cmd)))
	}
	return cs, func() { cs.Close(); cleanup() }, nil
}

// connectProblem says in words why a connection failed.
func connectProblem(err error, status *statusRecorder, cmd *exec.Cmd) string {
	if cmd != nil && cmd.ProcessState != nil {
		return fmt.Sprintf("the server exited (%v) before the handshake; its output, if any, is above", cmd.ProcessState)
	}
	if p := transportProblem(err); p != "" {
		return p
	}
	if code, text := status.last(); code >= 300 {
		p := fmt.Sprintf("the server answered HTTP %d %s", code, text)
		switch code {
		case http.StatusUnauthorized, http.StatusForbidden:
			p += " (send credentials with -header 'Authorization: Bearer TOKEN')"
		case http.StatusNotFound, http.StatusMethodNotAllowed:
			p += " (is the URL the server's MCP endpoint? servers built on package endpoint serve /mcp)"
		}
		return p
	}
	return errText(err)
}

// transportProblem words the network, TLS or process failure under err:
// "connection refused", "no such host example.com", "TLS handshake
// failed: ...", "timed out"; "" when err is none of them. The Go SDK
// reports such failures as its own -32005 "rejected by transport", with
// the underlying error wrapped beside it.
func transportProblem(err error) string {
	var (
		execErr *exec.Error
		dns     *net.DNSError
		cert    *tls.CertificateVerificationError
		record  tls.RecordHeaderError
		alert   tls.AlertError
		netErr  net.Error
		urlErr  *url.Error
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &execErr) && errors.Is(err, exec.ErrNotFound):
		return "command not found: " + execErr.Name
	case errors.As(err, &execErr):
		return fmt.Sprintf("could not start %s: %v", execErr.Name, execErr.Err)
	case errors.As(err, &dns) && dns.IsNotFound:
		return "no such host " + dns.Name
	case errors.As(err, &dns) && dns.IsTimeout:
		return "looking up " + dns.Name + " timed out"
	case errors.As(err, &dns):
		return "looking up " + dns.Name + " failed: " + dns.Err
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused (is the server running, on that port?)"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset by the server"
	case errors.Is(err, syscall.EHOSTUNREACH):
		return "host unreachable"
	case errors.Is(err, syscall.ENETUNREACH):
		return "network unreachable"
	case errors.As(err, &cert):
		return "TLS handshake failed: the server's certificate is not trusted: " + cert.Err.Error()
	case errors.As(err, &record), errors.Is(err, http.ErrSchemeMismatch):
		return "TLS handshake failed: the server does not speak TLS (try http:// instead of https://)"
	case errors.As(err, &alert):
		return "TLS handshake failed: the server refused it: " + alert.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timed out"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the server closed the connection in the middle of a reply"
	case errors.Is(err, mcp.ErrConnectionClosed), errors.Is(err, io.EOF):
		return "the connection to the server closed (did it exit? its output, if any, is above)"
	case errors.As(err, &urlErr):
		return text.OneLine(urlErr.Err.Error())
	}
	return ""
}

// errText says what err is, for a person, on one line: the transport
// failure under it, the JSON-RPC error, or its text.
func errText(err error) string {
	if p := transportProblem(err); p != "" {
		return p
	}
	if e := rpcErrorOf(err, ""); e != nil {
		return text.OneLine(fmt.Sprintf("error %d: %s", e.Code, e.Message))
	}
	return text.OneLine(err.Error())
}

// statusRecorder keeps the status of the last HTTP response.
type statusRecorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	code int
	text string
}

func (s *statusRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.base.RoundTrip(req)
	if err == nil {
		s.mu.Lock()
		s.code, s.text = resp.StatusCode, http.StatusText(resp.StatusCode)
		s.mu.Unlock()
	}
	return resp, err
}

// last returns the status of the last response; 0 if none (or s is nil).
func (s *statusRecorder) last() (int, string) {
	if s == nil {
		return 0, ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.code, s.text
}

// headerTransport adds headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers []string
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for _, h := range t.headers {
		name, value, _ := strings.Cut(h, ":")
		req.Header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	return t.base.RoundTrip(req)
}

// Catalogs: one reader for every command.

// readCatalog reads a catalog file with [lint.ReadCatalog], the one
// reader of every command: a tools/list result, a JSON-RPC response
// holding one, a bare array of tools, or the testdata/catalogs shape
// (with "server" and "protocolVersion"); a catalog without tools is an
// error. A failure is a could-not-run error naming the file.
func readCatalog(path string) (*lint.Target, error) {
	t, err := lint.ReadCatalog(path)
	if err != nil {
		return nil, couldNotRun(err)
	}
	return t, nil
}

// Progressive disclosure: the tool_descriptions resource.

// descriptionsName is the name of the progressive-disclosure resource
// (seed 004 section 4.1), the last element of its URI's path.
const descriptionsName = "tool_descriptions"

// descriptionsResource returns the URI of the server's tool_descriptions
// resource, or "" if it has none (or no resources at all).
func descriptionsResource(ctx context.Context, cs *mcp.ClientSession) (string, error) {
	if caps := cs.InitializeResult().Capabilities; caps == nil || caps.Resources == nil {
		return "", nil
	}
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			return "", fmt.Errorf("resources/list: %s", errText(err))
		}
		u, perr := url.Parse(r.URI)
		if perr == nil && path.Base(u.Path) == descriptionsName {
			return r.URI, nil
		}
	}
	return "", nil
}

// descriptionsBatch is how many tools one resources/read asks for (a
// disclose server serves up to disclose.DefaultMaxToolsPerRead).
const descriptionsBatch = 50

// readDescriptions reads the full definitions of the named tools from the
// tool_descriptions resource at uri, a batch of names at a time, and
// returns them by name. Reading them authorizes the tools in the server's
// disclosure scope, as any client's read does.
func readDescriptions(ctx context.Context, cs *mcp.ClientSession, uri string, names []string) (map[string]json.RawMessage, error) {
	full := map[string]json.RawMessage{}
	for start := 0; start < len(names); start += descriptionsBatch {
		batch := names[start:min(start+descriptionsBatch, len(names))]
		res, err := readRateLimited(ctx, cs, disclose.SelectionURI(uri, batch...))
		if err != nil {
			return nil, fmt.Errorf("resources/read %s: %s", uri, errText(err))
		}
		var body string
		for _, c := range res.Contents {
			if c != nil && c.Text != "" {
				body = c.Text
				break
			}
		}
		var entries map[string]json.RawMessage
		if err := json.Unmarshal([]byte(body), &entries); err != nil {
			return nil, fmt.Errorf("resources/read %s: not a JSON object of descriptions: %v", uri, err)
		}
		for _, n := range batch {
			e, ok := entries[n]
			if !ok {
				return nil, fmt.Errorf("resources/read %s: no description of %s", uri, text.OneLine(n))
			}
			full[n] = e
		}
	}
	return full, nil
}

// readRateLimited reads uri, waiting and trying again (up to 5 times)
// while the server answers RATE_LIMITED with a time to retry after.
func readRateLimited(ctx context.Context, cs *mcp.ClientSession, uri string) (*mcp.ReadResourceResult, error) {
	for try := 0; ; try++ {
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		e := rpcErrorOf(err, "resources/read")
		if err == nil || e == nil || e.Code != disclose.RPCRateLimited || try == 5 {
			return res, err
		}
		var data disclose.Error
		if json.Unmarshal(e.Data, &data) != nil || data.RetryAfterMS <= 0 {
			return res, err
		}
		t := time.NewTimer(time.Duration(data.RetryAfterMS) * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// Observing a server for lint and docs.

// observe reads the catalog the command line names, or connects to the
// server once and observes it with [lint.Observe]: tools/list, the full
// definitions from tool_descriptions when the server discloses them
// progressively, and tools/resolve probed in both shapes. The session
// declares the tool-resolution extension; under 2026-07-28 the seed shape
// is probed on the same connection by requests that declare no
// capabilities, and under 2025-11-25 over a second HTTP session (a
// legacy session declares its capabilities once; a command is not started
// twice, so over stdio only the extension shape is probed). Failures are
// could-not-run errors.
func (f *serverFlags) observe(ctx context.Context, env *env, inv invocation, opts *lint.ProbeOptions) (*lint.Target, error) {
	if !f.server(inv) {
		return readCatalog(inv.args[0])
	}
	ext, closeExt, err := f.tappedSession(ctx, env, inv, true)
	if err != nil {
		return nil, err
	}
	defer closeExt()
	var seed lint.Session
	var note string
	switch {
	case ext.cs.InitializeResult().ProtocolVersion >= preflight.ProtocolStateless:
		seed = &tappedSession{cs: ext.cs, tap: ext.tap, init: ext.init,
			meta: mcp.Meta{mcp.MetaKeyClientCapabilities: map[string]any{}}}
	case f.url != "":
		s, closeSeed, err := f.tappedSession(ctx, env, inv, false)
		if err != nil {
			return nil, err
		}
		defer closeSeed()
		seed = s
	default:
		note = "the seed shape was not probed: the server speaks " + ext.cs.InitializeResult().ProtocolVersion +
			" over stdio, whose one session declares the tool-resolution extension; lint it over HTTP (-url) to probe both shapes"
	}
	t, err := lint.Observe(ctx, f.source(inv), ext, seed, opts)
	if err != nil {
		return nil, couldNotRun(errors.New(errText(err)))
	}
	if note != "" {
		t.Notes = append(t.Notes, note)
	}
	return t, nil
}

// tappedSession connects a client that records the raw results lint
// needs. extension says whether it declares the tool-resolution extension.
func (f *serverFlags) tappedSession(ctx context.Context, env *env, inv invocation, extension bool) (*tappedSession, func(), error) {
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
	cs, closeSession, err := f.dial(ctx, client, inv, env.stderr, &dialHooks{
		http:  func(rt http.RoundTripper) http.RoundTripper { return &tapRoundTripper{rt, tap} },
		stdio: func(t mcp.Transport) mcp.Transport { return &tapTransport{t, tap} },
	})
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

// tappedSession is a [lint.Session] (and a [lint.Describer]) on an SDK
// client session whose raw results a wire tap records.
type tappedSession struct {
	cs   *mcp.ClientSession
	tap  *wireTap
	init json.RawMessage
	// meta, if set, is the _meta of every request this view sends: the
	// seed view of a 2026-07-28 session declares no capabilities with it
	// (the SDK keeps per-request fields a request already has).
	meta mcp.Meta
}

func (s *tappedSession) InitializeResult() json.RawMessage { return s.init }

// requestMeta returns a copy of s.meta for one request (the SDK adds to
// it).
func (s *tappedSession) requestMeta() mcp.Meta {
	if s.meta == nil {
		return nil
	}
	return maps.Clone(s.meta)
}

func (s *tappedSession) ListTools(ctx context.Context) ([]json.RawMessage, error) {
	var pages []json.RawMessage
	cursor := ""
	for range 1000 {
		res, err := s.cs.ListTools(ctx, &mcp.ListToolsParams{Meta: s.requestMeta(), Cursor: cursor})
		if err != nil {
			return nil, errors.New(errText(err))
		}
		raw := s.tap.take("tools/list")
		if len(raw) == 0 {
			// Not seen on the wire (a page the SDK cached): its view.
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
		cursor = res.NextCursor
	}
	return nil, errors.New("tools/list: more than 1000 pages")
}

func (s *tappedSession) Resolve(ctx context.Context, name string, args map[string]any) (json.RawMessage, error) {
	p := &preflight.ResolveParams{Name: name, Arguments: args}
	p.Meta = s.requestMeta()
	res, err := mcp.CallCustomMethod[*preflight.ResolveParams, *rawResult](ctx, s.cs, preflight.MethodResolve, p)
	if err != nil {
		if rpcErrorOf(err, preflight.MethodResolve) == nil {
			if tp := transportProblem(err); tp != "" {
				return nil, errors.New(tp) // not the SDK's -32005
			}
		}
		return nil, err
	}
	return res.raw, nil
}

// Describe reads the full definitions of names from the server's
// tool_descriptions resource, if it has one.
func (s *tappedSession) Describe(ctx context.Context, names []string) (string, map[string]json.RawMessage, error) {
	uri, err := descriptionsResource(ctx, s.cs)
	if err != nil || uri == "" {
		return "", nil, err
	}
	defs, err := readDescriptions(ctx, s.cs, uri, names)
	if err != nil {
		return "", nil, err
	}
	return uri, defs, nil
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
