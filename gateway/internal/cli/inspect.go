package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/policy"
	"github.com/preflightmcp/preflight/resolve"
)

// Tool-resolution shapes a client can ask for.
const (
	shapeExtension = "extension"
	shapeSeed      = "seed"
)

type inspectCmd struct {
	url     string
	json    bool
	shape   string
	era     string
	yes     bool
	timeout time.Duration
	headers headerFlag
}

func (c *inspectCmd) synopsis() string {
	return `usage: preflight inspect [flags] [list]                   (-url URL | -- COMMAND [ARG...])
       preflight inspect [flags] resolve NAME [ARGS_JSON]   (-url URL | -- COMMAND [ARG...])
       preflight inspect [flags] call NAME [ARGS_JSON]      (-url URL | -- COMMAND [ARG...])

Connects to an MCP server, over streamable HTTP (-url) or by starting
COMMAND and speaking over its stdin and stdout, and runs one operation:

  list      the tools with their static annotations, policy hints, and
            whether they are resolvable (the default operation)
  resolve   send tools/resolve for tool NAME with the arguments ARGS_JSON
            (a JSON object, default {}), print the result as received and
            the client's decision: effective annotations and hints with
            where each came from, confirm?, safe to retry?
  call      resolve, decide, then call; a call that needs confirmation is
            refused unless -yes is given

By default the client declares the io.modelcontextprotocol/tool-resolution
extension, so a server answers in the extension shape; -shape seed declares
nothing, and a server answers in the SEP-1862 seed shape ({tool: ...}).

Examples:

  preflight inspect -url http://127.0.0.1:8080/mcp
  preflight inspect -url http://127.0.0.1:8080/mcp resolve manage_files '{"path":"a.txt","action":"read"}'
  preflight inspect -yes call manage_files '{"path":"a.txt","action":"delete"}' -- go run ./examples/files -root DIR
  preflight inspect -- npx -y @modelcontextprotocol/server-memory
`
}

func (c *inspectCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.url, "url", "", "streamable HTTP endpoint of the server, such as http://127.0.0.1:8080/mcp")
	fs.BoolVar(&c.json, "json", false, "print JSON instead of text")
	fs.StringVar(&c.shape, "shape", shapeExtension,
		"tool-resolution shape: extension (declare "+preflight.ExtensionToolResolution+") or seed (declare nothing)")
	fs.StringVar(&c.era, "era", "", "protocol version to ask for: "+preflight.ProtocolStateless+" or "+preflight.ProtocolLegacy+
		"\n(default: the newest, falling back to "+preflight.ProtocolLegacy+" for servers without server/discover)")
	fs.BoolVar(&c.yes, "yes", false, "call: confirm a call whose decision needs confirmation")
	fs.DurationVar(&c.timeout, "timeout", 2*time.Minute, "give up after this long; 0 waits forever")
	fs.Var(&c.headers, "header", "HTTP header `Name: value` sent with every request, such as an Authorization header\n(repeatable; -url only)")
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

// inspectOp is a parsed operation.
type inspectOp struct {
	name string // list, resolve or call
	tool string
	args map[string]any
}

func (c *inspectCmd) parseOp(args []string) (inspectOp, error) {
	op := inspectOp{name: "list"}
	if len(args) > 0 {
		op.name, args = args[0], args[1:]
	}
	switch op.name {
	case "list":
		if len(args) > 0 {
			return op, usagef("list takes no arguments, got %q (a command to start goes after --)", args)
		}
		return op, nil
	case "resolve", "call":
	default:
		return op, usagef("unknown operation %q: want list, resolve or call", op.name)
	}
	if len(args) == 0 {
		return op, usagef("%s needs a tool name: %s NAME [ARGS_JSON]", op.name, op.name)
	}
	if len(args) > 2 {
		return op, usagef("%s takes a tool name and one JSON object, got %d arguments (quote the JSON; a command to start goes after --)", op.name, len(args))
	}
	op.tool = args[0]
	op.args = map[string]any{}
	if len(args) == 2 {
		var v any
		if err := json.Unmarshal([]byte(args[1]), &v); err != nil {
			return op, usagef("ARGS_JSON %q is not valid JSON (%v); give the arguments as one JSON object, such as '{\"path\":\"a.txt\",\"action\":\"read\"}'", args[1], err)
		}
		m, ok := v.(map[string]any)
		if !ok {
			return op, usagef("ARGS_JSON %s is not a JSON object; give the arguments as one JSON object, such as '{\"path\":\"a.txt\",\"action\":\"read\"}'", args[1])
		}
		op.args = m
	}
	return op, nil
}

func (c *inspectCmd) run(ctx context.Context, inv invocation, stdout, stderr io.Writer) error {
	op, err := c.parseOp(inv.args)
	if err != nil {
		return err
	}
	switch {
	case c.url == "" && !inv.dashDash:
		return usagef("no server: give -url URL, or a command to start after --")
	case c.url != "" && inv.dashDash:
		return usagef("give either -url or a command after --, not both")
	case inv.dashDash && len(inv.rest) == 0:
		return usagef("no command after --")
	case c.url == "" && len(c.headers) > 0:
		return usagef("-header applies to -url only")
	}
	if c.shape != shapeExtension && c.shape != shapeSeed {
		return usagef("-shape %q: want %s or %s", c.shape, shapeExtension, shapeSeed)
	}
	if c.era != "" && c.era != preflight.ProtocolStateless && c.era != preflight.ProtocolLegacy {
		return usagef("-era %q: want %s or %s", c.era, preflight.ProtocolStateless, preflight.ProtocolLegacy)
	}

	if _, isFile := stderr.(*os.File); !isFile {
		// A started server writes its logs to stderr from another
		// goroutine, while the operation writes its own messages.
		stderr = &syncWriter{w: stderr}
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	cs, closeSession, err := c.connect(ctx, inv.rest, stderr)
	if err != nil {
		return err
	}
	defer closeSession()

	in := &inspection{cmd: c, cs: cs, stdout: stdout, stderr: stderr}
	switch op.name {
	case "resolve":
		return in.resolve(ctx, op)
	case "call":
		return in.call(ctx, op)
	}
	return in.list(ctx)
}

// connect starts a session with the server.
func (c *inspectCmd) connect(ctx context.Context, command []string, stderr io.Writer) (*mcp.ClientSession, func(), error) {
	impl := &mcp.Implementation{Name: "preflight-inspect", Version: version}
	var client *mcp.Client
	if c.shape == shapeSeed {
		client = mcp.NewClient(impl, nil)
		if err := resolve.EnableClient(client); err != nil {
			return nil, nil, err
		}
	} else {
		client = resolve.NewClient(impl, nil)
	}
	return dial(ctx, client, dialOptions{url: c.url, headers: c.headers, command: command, era: c.era}, stderr)
}

// dialOptions say how to reach a server: a streamable HTTP URL (with extra
// headers), or a command started and spoken to over its stdin and stdout.
type dialOptions struct {
	url     string
	headers []string
	command []string
	// era is the protocol version to ask for; "" for the SDK's default.
	era string
	// wrapHTTP, if set, wraps the HTTP round tripper of a URL.
	wrapHTTP func(http.RoundTripper) http.RoundTripper
	// wrapStdio, if set, wraps the transport of a command.
	wrapStdio func(mcp.Transport) mcp.Transport
}

// dial connects client to the server opts names. The started command's
// stderr goes to stderr. close ends the session (and the command).
func dial(ctx context.Context, client *mcp.Client, opts dialOptions, stderr io.Writer) (*mcp.ClientSession, func(), error) {
	var (
		t       mcp.Transport
		cleanup = func() {}
		target  string
	)
	if opts.url != "" {
		base := http.DefaultTransport.(*http.Transport).Clone()
		var rt http.RoundTripper = base
		if len(opts.headers) > 0 {
			rt = headerTransport{base, opts.headers}
		}
		if opts.wrapHTTP != nil {
			rt = opts.wrapHTTP(rt)
		}
		t = &mcp.StreamableClientTransport{Endpoint: opts.url, HTTPClient: &http.Client{Transport: rt}}
		cleanup, target = base.CloseIdleConnections, opts.url
	} else {
		cmd := exec.CommandContext(ctx, opts.command[0], opts.command[1:]...)
		cmd.Stderr = stderr // the server's logs
		t = &mcp.CommandTransport{Command: cmd}
		if opts.wrapStdio != nil {
			t = opts.wrapStdio(t)
		}
		target = strings.Join(opts.command, " ")
	}
	cs, err := client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: opts.era})
	if err != nil {
		cleanup()
		if e := rpcErrorOf(err, "connect"); e != nil {
			return nil, nil, fmt.Errorf("connect to %s: error %d: %s", target, e.Code, e.Message)
		}
		return nil, nil, fmt.Errorf("connect to %s: %w", target, err)
	}
	return cs, func() { cs.Close(); cleanup() }, nil
}

// syncWriter serialises writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
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

// inspection is one operation on a connected session.
type inspection struct {
	cmd            *inspectCmd
	cs             *mcp.ClientSession
	stdout, stderr io.Writer
}

// serverView describes the server for the output.
type serverView struct {
	Name            string `json:"name,omitempty"`
	Version         string `json:"version,omitempty"`
	ProtocolVersion string `json:"protocolVersion"`
	// Extension reports whether the server declares the tool-resolution
	// extension in its capabilities.
	Extension bool `json:"toolResolutionExtension"`
}

func (in *inspection) server() serverView {
	r := in.cs.InitializeResult()
	v := serverView{ProtocolVersion: r.ProtocolVersion}
	if r.ServerInfo != nil {
		v.Name, v.Version = r.ServerInfo.Name, r.ServerInfo.Version
	}
	if r.Capabilities != nil {
		_, v.Extension = r.Capabilities.Extensions[preflight.ExtensionToolResolution]
	}
	return v
}

func (v serverView) text() string {
	name := strings.TrimSpace(v.Name + " " + v.Version)
	if name == "" {
		name = "(unnamed)"
	}
	ext := "not declared"
	if v.Extension {
		ext = "declared"
	}
	return fmt.Sprintf("server %s, protocol %s, tool-resolution extension %s", name, v.ProtocolVersion, ext)
}

// fail reports an operation's failure: in JSON mode the document (which
// carries the error) goes to stdout, otherwise msg goes to stderr.
func (in *inspection) fail(doc any, msg func(w io.Writer)) error {
	if in.cmd.json {
		if err := writeJSON(in.stdout, doc); err != nil {
			return err
		}
	} else {
		msg(in.stderr)
	}
	return errReported
}

// listedTool is one tool of the list operation's JSON output.
type listedTool struct {
	Name        string               `json:"name"`
	Title       string               `json:"title,omitempty"`
	Description string               `json:"description,omitempty"`
	Annotations *mcp.ToolAnnotations `json:"annotations"`
	// Effective are the four annotations with the protocol defaults
	// applied, what a client assumes without resolving.
	Effective      preflight.Annotations `json:"effectiveAnnotations"`
	Hints          map[string]any        `json:"hints,omitempty"`
	HintErrors     string                `json:"hintErrors,omitempty"`
	Contradictions []string              `json:"contradictions,omitempty"`
	// Resolvable is null when the client cannot tell: in the seed shape,
	// the marker is the top-level Tool.resolve the SDK does not decode.
	Resolvable *bool `json:"resolvable"`
	// Static is the decision from tools/list alone.
	NeedsConfirmation bool `json:"needsConfirmation"`
	SafeToRetry       bool `json:"safeToRetry"`
}

func (in *inspection) list(ctx context.Context) error {
	srv := in.server()
	var tools []listedTool
	for t, err := range in.cs.Tools(ctx, nil) {
		if err != nil {
			e := rpcErrorOf(err, "tools/list")
			return in.fail(map[string]any{"server": srv, "error": errorDoc(err, e)}, func(w io.Writer) {
				writeError(w, "tools/list", err, e)
			})
		}
		h, herr := hints.Read(t.Meta)
		lt := listedTool{
			Name:        t.Name,
			Title:       t.Title,
			Description: t.Description,
			Annotations: t.Annotations,
			Effective:   preflight.AnnotationsOf(t.Annotations),
		}
		if lt.Title == "" && t.Annotations != nil {
			lt.Title = t.Annotations.Title
		}
		if !h.IsZero() {
			lt.Hints = h.Write(nil)
		}
		if herr != nil {
			lt.HintErrors = strings.ReplaceAll(herr.Error(), "\n", "; ")
		}
		for _, c := range hints.Contradictions(lt.Effective, h) {
			lt.Contradictions = append(lt.Contradictions, c.String())
		}
		if in.cmd.shape == shapeExtension {
			r := preflight.IsResolvable(t)
			lt.Resolvable = &r
		}
		static := staticEffective(t)
		lt.NeedsConfirmation, lt.SafeToRetry = static.NeedsConfirmation(), static.SafeToRetry()
		tools = append(tools, lt)
	}
	if in.cmd.json {
		return writeJSON(in.stdout, map[string]any{"server": srv, "tools": tools})
	}

	w := in.stdout
	fmt.Fprintf(w, "%s\n\n", srv.text())
	if len(tools) == 0 {
		fmt.Fprintln(w, "no tools")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tANNOTATIONS\tHINTS\tCONFIRM?\tRETRY?\tRESOLVABLE\tDESCRIPTION")
	var notes []string
	for _, t := range tools {
		h, _ := hints.Read(t.Hints)
		resolvable := "?"
		if t.Resolvable != nil {
			resolvable = yesNo(*t.Resolvable)
		}
		ann := annFlags(t.Effective)
		if t.Annotations == nil {
			ann = "(none)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, ann, hintsText(h),
			yesNo(t.NeedsConfirmation), yesNo(t.SafeToRetry), resolvable, shorten(t.Description, 50))
		if t.HintErrors != "" {
			notes = append(notes, fmt.Sprintf("%s: invalid hints, ignored: %s", t.Name, t.HintErrors))
		}
		for _, c := range t.Contradictions {
			notes = append(notes, fmt.Sprintf("%s: hint contradicts the annotations: %s", t.Name, c))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nannotations: %s; (none): no annotations, the protocol defaults apply (%s).\n",
		flagsLegend, annFlags(preflight.DefaultAnnotations))
	fmt.Fprintln(w, "CONFIRM? and RETRY? are what a client decides from tools/list alone, without resolving.")
	if in.cmd.shape == shapeSeed {
		fmt.Fprintln(w, "RESOLVABLE ?: in the seed shape the marker is the top-level Tool.resolve, which the Go SDK does not decode; use -shape extension, or resolve a call to find out.")
	}
	for _, n := range notes {
		fmt.Fprintln(w, "note:", n)
	}
	return nil
}

// lookupTool returns the tool called name as listed, or a bare tool with
// that name and listed false.
func (in *inspection) lookupTool(ctx context.Context, name string) (tool *mcp.Tool, listed bool, err error) {
	t, err := findTool(ctx, in.cs, name)
	if err != nil {
		return nil, false, err
	}
	if t == nil {
		return &mcp.Tool{Name: name}, false, nil
	}
	return t, true, nil
}

// resolveDoc is the JSON output of the resolve operation.
type resolveDoc struct {
	Server    serverView               `json:"server"`
	Tool      string                   `json:"tool"`
	Arguments map[string]any           `json:"arguments"`
	Shape     string                   `json:"shape"`
	Listed    bool                     `json:"listed"`
	Result    *preflight.ResolveResult `json:"result,omitempty"`
	Error     any                      `json:"error,omitempty"`
	Decision  *decisionView            `json:"decision,omitempty"`
	// Static is the decision from tools/list alone, for comparison.
	Static *policy.Effective `json:"static,omitempty"`
	// DecisionError is why the client made no decision, or made one from
	// the protocol defaults only.
	DecisionError string `json:"decisionError,omitempty"`
}

func (in *inspection) resolve(ctx context.Context, op inspectOp) error {
	tool, listed, err := in.lookupTool(ctx, op.tool)
	if err != nil {
		return err
	}
	doc := resolveDoc{Server: in.server(), Tool: op.tool, Arguments: op.args, Shape: in.cmd.shape, Listed: listed}

	res, rerr := resolve.Resolve(ctx, in.cs, op.tool, op.args)
	var rpcErr *rpcError
	if rerr != nil {
		rpcErr = rpcErrorOf(rerr, preflight.MethodResolve)
		doc.Error = errorDoc(rerr, rpcErr)
	} else {
		doc.Result = res
	}

	// The client's decision, made as a resolve-before-call client makes
	// it (which resolves once more; resolution has no side effects). It
	// is made for unlisted tools only when the server did resolve them.
	var d *resolve.Decision
	var derr error
	if listed || rerr == nil {
		d, derr = resolve.Preflight(ctx, in.cs, tool, op.args, &resolve.ClientOptions{ResolveUnmarked: true})
		doc.Decision = viewDecision(d)
		if derr != nil {
			doc.DecisionError = derr.Error()
		}
		if listed {
			s := staticEffective(tool)
			doc.Static = &s
		}
	}

	if in.cmd.json {
		if err := writeJSON(in.stdout, doc); err != nil {
			return err
		}
		if rerr != nil {
			return errReported
		}
		return nil
	}

	w := in.stdout
	fmt.Fprintf(w, "%s\n", doc.Server.text())
	fmt.Fprintf(w, "tools/resolve %s %s, %s shape\n\n", op.tool, compactJSON(op.args), in.cmd.shape)
	if !listed {
		fmt.Fprintf(w, "note: tools/list has no tool %q\n\n", op.tool)
	}
	if rerr != nil {
		writeError(in.stderr, preflight.MethodResolve, rerr, rpcErr)
	} else {
		fmt.Fprintln(w, "result:")
		b, _ := json.MarshalIndent(res, "  ", "  ")
		fmt.Fprintf(w, "  %s\n\n", b)
	}
	if d != nil {
		in.writeDecision(w, tool, listed, d)
	}
	if derr != nil && d != nil {
		fmt.Fprintf(w, "warning: %v\n", derr)
	}
	if rerr != nil {
		return errReported
	}
	return nil
}

// writeDecision writes a decision as a table of effective values beside
// the static ones.
func (in *inspection) writeDecision(w io.Writer, tool *mcp.Tool, listed bool, d *resolve.Decision) {
	fmt.Fprintf(w, "decision (%s):\n", origin(d))
	e := d.Effective
	s := staticEffective(tool)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	static := "FROM TOOLS/LIST"
	if !listed {
		static = "FROM TOOLS/LIST (not listed)"
	}
	fmt.Fprintf(tw, "  NAME\tEFFECTIVE\tSOURCE\t%s\n", static)
	row := func(name string, v, src, sv any) { fmt.Fprintf(tw, "  %s\t%v\t%s\t%v\n", name, v, src, sv) }
	row("readOnlyHint", e.ReadOnly.Value, e.ReadOnly.Source, s.ReadOnly.Value)
	row("destructiveHint", e.Destructive.Value, e.Destructive.Source, s.Destructive.Value)
	row("idempotentHint", e.Idempotent.Value, e.Idempotent.Source, s.Idempotent.Value)
	row("openWorldHint", e.OpenWorld.Value, e.OpenWorld.Source, s.OpenWorld.Value)
	row(preflight.MetaEffect, e.Effect.Value, e.Effect.Source, s.Effect.Value)
	row(preflight.MetaIdempotent, e.IdempotentCall.Value, e.IdempotentCall.Source, s.IdempotentCall.Value)
	row(preflight.MetaRequiresConfirmation, e.RequiresConfirmation.Value, e.RequiresConfirmation.Source, s.RequiresConfirmation.Value)
	row(preflight.MetaResultSensitivity, orDash(string(e.ResultSensitivity.Value)), e.ResultSensitivity.Source, orDash(string(s.ResultSensitivity.Value)))
	// The two decisions, with the source of the value that settled them.
	retrySource := e.IdempotentCall.Source
	if e.ReadOnly.Value {
		retrySource = e.ReadOnly.Source
	}
	fmt.Fprintf(tw, "  confirm?\t%s\t%s\t%s\n", yesNo(d.NeedsConfirmation()), e.RequiresConfirmation.Source, yesNo(s.NeedsConfirmation()))
	fmt.Fprintf(tw, "  safe to retry?\t%s\t%s\t%s\n", yesNo(d.SafeToRetry()), retrySource, yesNo(s.SafeToRetry()))
	tw.Flush()
	for _, sc := range d.SecuritySchemes {
		fmt.Fprintf(w, "  security scheme: %s %s\n", sc.Type, strings.Join(sc.Scopes, " "))
	}
	fmt.Fprintln(w)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// callDoc is the JSON output of the call operation.
type callDoc struct {
	Server    serverView          `json:"server"`
	Tool      string              `json:"tool"`
	Arguments map[string]any      `json:"arguments"`
	Shape     string              `json:"shape"`
	Listed    bool                `json:"listed"`
	Decision  *decisionView       `json:"decision,omitempty"`
	Warning   string              `json:"warning,omitempty"`
	Confirmed bool                `json:"confirmed"`
	Refused   string              `json:"refused,omitempty"`
	Result    *mcp.CallToolResult `json:"result,omitempty"`
	Error     any                 `json:"error,omitempty"`
}

func (in *inspection) call(ctx context.Context, op inspectOp) error {
	tool, listed, err := in.lookupTool(ctx, op.tool)
	if err != nil {
		return err
	}
	doc := callDoc{Server: in.server(), Tool: op.tool, Arguments: op.args, Shape: in.cmd.shape, Listed: listed}
	// In the seed shape the marker is invisible to the SDK, and a tool
	// missing from tools/list has none: resolve anyway, and let the server
	// say what it knows.
	opts := &resolve.ClientOptions{ResolveUnmarked: in.cmd.shape == shapeSeed || !listed}
	d, perr := resolve.Preflight(ctx, in.cs, tool, op.args, opts)
	if d == nil {
		e := rpcErrorOf(perr, preflight.MethodResolve)
		doc.Error = errorDoc(perr, e)
		return in.fail(doc, func(w io.Writer) {
			writeError(w, preflight.MethodResolve, perr, e)
			fmt.Fprintf(w, "not called: %s\n", op.tool)
		})
	}
	doc.Decision = viewDecision(d)
	if perr != nil {
		doc.Warning = perr.Error()
	}
	w := in.stdout
	if !in.cmd.json {
		fmt.Fprintf(w, "%s\n", doc.Server.text())
		fmt.Fprintf(w, "call %s %s, %s shape\n", op.tool, compactJSON(op.args), in.cmd.shape)
		if !listed {
			fmt.Fprintf(w, "note: tools/list has no tool %q\n", op.tool)
		}
		e := d.Effective
		fmt.Fprintf(w, "decision (%s): %s, effect %s, confirm? %s, safe to retry? %s\n",
			origin(d), annFlags(e.Annotations()), e.Effect.Value, yesNo(d.NeedsConfirmation()), yesNo(d.SafeToRetry()))
		if perr != nil {
			fmt.Fprintf(w, "warning: %v\n", perr)
		}
	}
	if d.NeedsConfirmation() {
		if !in.cmd.yes {
			e := d.Effective.RequiresConfirmation
			doc.Refused = fmt.Sprintf("the call needs confirmation (%s %t, %s); run again with -yes to confirm it", preflight.MetaRequiresConfirmation, e.Value, e.Source)
			return in.fail(doc, func(w io.Writer) { fmt.Fprintf(w, "refused: %s\n", doc.Refused) })
		}
		doc.Confirmed = true
		if !in.cmd.json {
			fmt.Fprintln(w, "confirmed with -yes")
		}
	}

	res, cerr := d.Call(ctx, in.cs)
	if cerr != nil {
		e := rpcErrorOf(cerr, "tools/call")
		doc.Error = errorDoc(cerr, e)
		return in.fail(doc, func(w io.Writer) { writeError(w, "tools/call", cerr, e) })
	}
	doc.Result = res
	if in.cmd.json {
		if err := writeJSON(w, doc); err != nil {
			return err
		}
	} else {
		if res.IsError {
			fmt.Fprintln(w, "\ntool error:")
		} else {
			fmt.Fprintln(w, "\nresult:")
		}
		text := contentText(res)
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		fmt.Fprint(w, text)
	}
	if res.IsError {
		return errReported
	}
	return nil
}

// errorDoc is err for JSON output: the JSON-RPC error if it is one,
// else its message.
func errorDoc(err error, e *rpcError) any {
	if e != nil {
		return e
	}
	return map[string]string{"message": err.Error()}
}

// writeError writes err, answered to method, for a person.
func writeError(w io.Writer, method string, err error, e *rpcError) {
	if e != nil {
		writeRPCError(w, method, e)
		return
	}
	if errors.Is(err, resolve.ErrResolutionFailed) {
		fmt.Fprintf(w, "%s: %v\n  hint: the client cannot trust this call's annotations; call it only if you know what it does\n", method, err)
		return
	}
	fmt.Fprintf(w, "%s: %v\n", method, err)
}
