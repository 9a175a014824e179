package cli

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/disclose"
	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/policy"
	"github.com/preflightmcp/preflight/resolve"
	"github.com/preflightmcp/preflight/rounds"
)

// Tool-resolution shapes a client can ask for.
const (
	shapeExtension = "extension"
	shapeSeed      = "seed"
)

type inspectCmd struct {
	common
	server  serverFlags
	shape   string
	yes     bool
	answers answerFlag
	decline bool
	cancel  bool
}

func (c *inspectCmd) synopsis() string {
	return `usage: preflight inspect [flags] [OPERATION...]   (-url URL | -- COMMAND [ARG...])

OPERATION is one of:

  list                      the tools with their static annotations, policy
                            hints, and whether they are resolvable (the
                            default)
  resolve NAME [ARGS_JSON]  send tools/resolve for tool NAME with the
                            arguments ARGS_JSON (a JSON object, default {}),
                            print the result as received and the client's
                            decision: effective annotations and hints with
                            where each came from, confirm?, safe to retry?
  call NAME [ARGS_JSON]     resolve, decide, then call; a call that needs
                            confirmation is refused unless -yes is given
  read URI                  read a resource, such as the tool_descriptions
                            resource of a server that discloses its tools
                            progressively

Connects once, to a server over streamable HTTP (-url) or to COMMAND
started over its stdin and stdout, and runs the operations in order on
that one session, stopping at the first that fails: "read
'resource:///tool_descriptions?tools=manage_files' call manage_files ..."
fetches a description and then makes the call it authorizes.

A server may ask a question during a call (an elicitation: a form, or a
URL to open), under 2026-07-28 as input_required rounds and on
2025-11-25 sessions as requests within the call. The question's text is
shown with its control characters stripped, and it is answered with
-answer (accept with this content; repeatable, one per question in the
order they are asked), -decline or -cancel, or else on the terminal: one
prompt per field of the form, an empty answer declining, the end of the
input cancelling.

By default the client declares the io.modelcontextprotocol/tool-resolution
extension, so a server answers in the extension shape; -shape seed declares
nothing, and a server answers in the SEP-1862 seed shape ({tool: ...}).

Text output shows a tool's result indented under "result:", so that
nothing a server writes can pass for the command's own lines.

Exit status: 0 every operation succeeded; 1 one failed (a JSON-RPC error,
a tool error, a refused call); 2 usage error; 3 the server could not be
started or reached, or the connection failed (-timeout included).

Examples:

  preflight inspect -url http://127.0.0.1:8080/mcp
  preflight inspect -url http://127.0.0.1:8080/mcp resolve manage_files '{"path":"a.txt","action":"read"}'
  preflight inspect -yes call manage_files '{"path":"a.txt","action":"delete"}' -- go run ./examples/files -root DIR
  preflight inspect read 'resource:///tool_descriptions?tools=manage_files' \
      call manage_files '{"path":"a.txt","action":"read"}' -- go run ./examples/files -root DIR -disclose
  preflight inspect -answer '{"delete":true}' call delete_folder '{"path":"old"}' -- go run ./examples/folders -root DIR
  preflight inspect -- npx -y @modelcontextprotocol/server-memory
`
}

func (c *inspectCmd) flags(fs *flag.FlagSet) {
	c.bindOutput(fs, []string{"text", "json"}, "json")
	c.server.bind(fs)
	c.bindTimeout(fs)
	fs.StringVar(&c.shape, "shape", shapeExtension,
		"tool-resolution shape: extension (declare "+preflight.ExtensionToolResolution+") or seed (declare nothing)")
	fs.BoolVar(&c.yes, "yes", false, "call: confirm a call whose decision needs confirmation")
	fs.Var(&c.answers, "answer", "answer the server's next question by accepting it with this `JSON` object, such as '{\"delete\":true}'\n(repeatable: one per question, in the order they are asked)")
	fs.BoolVar(&c.decline, "decline", false, "decline every question (after the -answer values)")
	fs.BoolVar(&c.cancel, "cancel", false, "cancel every question (after the -answer values)")
}

// answerFlag collects -answer values: JSON objects.
type answerFlag []map[string]any

func (a *answerFlag) String() string {
	b, _ := json.Marshal([]map[string]any(*a))
	return string(b)
}

func (a *answerFlag) Set(v string) error {
	var m map[string]any
	if err := json.Unmarshal([]byte(v), &m); err != nil || m == nil {
		return fmt.Errorf("want a JSON object such as '{\"delete\":true}', got %q", v)
	}
	*a = append(*a, m)
	return nil
}

// inspectOp is a parsed operation.
type inspectOp struct {
	name string // list, resolve, call or read
	tool string // resolve and call
	args map[string]any
	uri  string // read
}

var opNames = []string{"list", "resolve", "call", "read"}

// parseOps parses the operations.
func parseOps(args []string) ([]inspectOp, error) {
	if len(args) == 0 {
		return []inspectOp{{name: "list"}}, nil
	}
	var ops []inspectOp
	for len(args) > 0 {
		op := inspectOp{name: args[0]}
		args = args[1:]
		switch op.name {
		case "list":
		case "read":
			if len(args) == 0 || slices.Contains(opNames, args[0]) {
				return nil, usagef("read needs a resource URI: read URI")
			}
			op.uri, args = args[0], args[1:]
		case "resolve", "call":
			if len(args) == 0 {
				return nil, usagef("%s needs a tool name: %s NAME [ARGS_JSON]", op.name, op.name)
			}
			op.tool, args = args[0], args[1:]
			op.args = map[string]any{}
			if len(args) > 0 && !slices.Contains(opNames, args[0]) {
				var v any
				if err := json.Unmarshal([]byte(args[0]), &v); err != nil {
					return nil, usagef("ARGS_JSON %q is not valid JSON (%v); give the arguments as one JSON object, such as '{\"path\":\"a.txt\",\"action\":\"read\"}'", args[0], err)
				}
				m, ok := v.(map[string]any)
				if !ok {
					return nil, usagef("ARGS_JSON %s is not a JSON object; give the arguments as one JSON object, such as '{\"path\":\"a.txt\",\"action\":\"read\"}'", args[0])
				}
				op.args, args = m, args[1:]
			}
		default:
			if len(ops) > 0 {
				return nil, usagef("unexpected %q after %s: want one of %s (quote ARGS_JSON as one argument; a command to start goes after --)", op.name, ops[len(ops)-1].name, wordList(opNames, "or"))
			}
			return nil, usagef("unknown operation %q: want %s (a command to start goes after --)", op.name, wordList(opNames, "or"))
		}
		ops = append(ops, op)
	}
	return ops, nil
}

func (c *inspectCmd) run(ctx context.Context, env *env, inv invocation) error {
	ops, err := parseOps(inv.args)
	if err != nil {
		return err
	}
	if err := c.server.check(inv, -1); err != nil {
		return err
	}
	if c.shape != shapeExtension && c.shape != shapeSeed {
		return usagef("-shape %q: want %s or %s", c.shape, shapeExtension, shapeSeed)
	}
	if c.decline && c.cancel {
		return usagef("give -decline or -cancel, not both")
	}

	in := &inspection{cmd: c, env: env, stdin: bufio.NewReader(env.stdin)}
	if env.stdin == nil {
		in.stdin = bufio.NewReader(strings.NewReader(""))
	}
	in.answers = slices.Clone(c.answers)
	cs, closeSession, err := c.server.dial(ctx, in.client(), inv, env.stderr, nil)
	if err != nil {
		return err
	}
	defer closeSession()
	in.cs = cs

	json := c.format == "json"
	var docs []any
	var failed error
	for i, op := range ops {
		in.first = i == 0
		var doc any
		switch op.name {
		case "resolve":
			doc, err = in.resolve(ctx, op)
		case "call":
			doc, err = in.call(ctx, op)
		case "read":
			doc, err = in.read(ctx, op)
		default:
			doc, err = in.list(ctx)
		}
		if doc != nil {
			docs = append(docs, doc)
		}
		if err != nil {
			failed = err
			break
		}
	}
	if json {
		var out any = docs
		if len(docs) == 1 {
			out = docs[0]
		}
		if len(docs) > 0 {
			if err := writeJSON(env.stdout, out); err != nil {
				return err
			}
		}
	}
	return failed
}

// inspection is a run of operations on one session.
type inspection struct {
	cmd   *inspectCmd
	env   *env
	cs    *mcp.ClientSession
	first bool // the operation is the first: text output names the server

	// mu serialises questions: one prompt at a time.
	mu        sync.Mutex
	stdin     *bufio.Reader
	answers   []map[string]any
	questions []questionView
}

// client makes the client: it declares the tool-resolution extension
// (unless -shape seed), sends tools/resolve, answers questions with
// [inspection.elicit] in both eras (input_required rounds through package
// rounds, requests within the call on legacy sessions).
func (in *inspection) client() *mcp.Client {
	caps := &mcp.ClientCapabilities{}
	if in.cmd.shape == shapeExtension {
		caps.AddExtension(preflight.ExtensionToolResolution, nil)
		caps.AddExtension(preflight.MetaPolicyHints, nil)
	}
	client := rounds.NewClient(&mcp.Implementation{Name: "preflight-inspect", Version: version},
		&mcp.ClientOptions{Capabilities: caps, ElicitationHandler: in.elicit}, nil)
	if err := resolve.EnableClient(client); err != nil {
		panic(err) // unreachable: tools/resolve is not a standard method
	}
	return client
}

// fail turns a failed request into the operation's error: a transport
// failure means the command could not run (exit 3), anything else that
// the operation failed (exit 1), reported in text mode by msg.
func (in *inspection) fail(err error, msg func(w io.Writer)) error {
	if err != nil && rpcErrorOf(err, "") == nil && transportProblem(err) != "" {
		return couldNotRun(errors.New(errText(err)))
	}
	if in.cmd.format != "json" && msg != nil {
		msg(in.env.stderr)
	}
	return errReported
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
	name := text.OneLine(v.Name + " " + v.Version)
	if name == "" {
		name = "(unnamed)"
	}
	ext := "not declared"
	if v.Extension {
		ext = "declared"
	}
	return fmt.Sprintf("server %s, protocol %s, tool-resolution extension %s", name, text.OneLine(v.ProtocolVersion), ext)
}

// header writes the server line before the first operation's text, and
// a blank line between operations.
func (in *inspection) header(w io.Writer) {
	if in.first {
		fmt.Fprintf(w, "%s\n", in.server().text())
	} else {
		fmt.Fprintln(w)
	}
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

// listDoc is the JSON output of the list operation.
type listDoc struct {
	Op     string       `json:"op"`
	Server serverView   `json:"server"`
	Tools  []listedTool `json:"tools"`
	Error  any          `json:"error,omitempty"`
}

func (in *inspection) list(ctx context.Context) (any, error) {
	doc := &listDoc{Op: "list", Server: in.server(), Tools: []listedTool{}}
	for t, err := range in.cs.Tools(ctx, nil) {
		if err != nil {
			e := rpcErrorOf(err, "tools/list")
			doc.Error = errorDoc(err, e)
			return doc, in.fail(err, func(w io.Writer) { writeError(w, "tools/list", err, e) })
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
		doc.Tools = append(doc.Tools, lt)
	}
	if in.cmd.format == "json" {
		return doc, nil
	}

	w := in.env.stdout
	in.header(w)
	fmt.Fprintln(w)
	if len(doc.Tools) == 0 {
		fmt.Fprintln(w, "no tools")
		return doc, nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tANNOTATIONS\tHINTS\tCONFIRM?\tRETRY?\tRESOLVABLE\tDESCRIPTION")
	var notes []string
	for _, t := range doc.Tools {
		h, _ := hints.Read(t.Hints)
		resolvable := "?"
		if t.Resolvable != nil {
			resolvable = yesNo(*t.Resolvable)
		}
		ann := annFlags(t.Effective)
		if t.Annotations == nil {
			ann = "(none)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cell(t.Name), ann, hintsText(h),
			yesNo(t.NeedsConfirmation), yesNo(t.SafeToRetry), resolvable, cell(shorten(t.Description, 50)))
		if t.HintErrors != "" {
			notes = append(notes, fmt.Sprintf("%s: invalid hints, ignored: %s", text.OneLine(t.Name), text.OneLine(t.HintErrors)))
		}
		for _, c := range t.Contradictions {
			notes = append(notes, fmt.Sprintf("%s: hint contradicts the annotations: %s", text.OneLine(t.Name), text.OneLine(c)))
		}
	}
	if err := tw.Flush(); err != nil {
		return doc, err
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
	return doc, nil
}

// cell is s for a table cell: on one line, never empty.
func cell(s string) string {
	if s = text.OneLine(s); s == "" {
		return "-"
	}
	return s
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
	Op        string                   `json:"op"`
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

func (in *inspection) resolve(ctx context.Context, op inspectOp) (any, error) {
	tool, listed, err := in.lookupTool(ctx, op.tool)
	if err != nil {
		return nil, in.fail(err, func(w io.Writer) { fmt.Fprintln(w, errText(err)) })
	}
	doc := &resolveDoc{Op: "resolve", Server: in.server(), Tool: op.tool, Arguments: op.args, Shape: in.cmd.shape, Listed: listed}

	res, rerr := resolve.Resolve(ctx, in.cs, op.tool, op.args)
	var rpcErr *rpcError
	if rerr != nil {
		rpcErr = rpcErrorOf(rerr, preflight.MethodResolve)
		doc.Error = errorDoc(rerr, rpcErr)
		if rpcErr == nil && transportProblem(rerr) != "" {
			return doc, in.fail(rerr, nil)
		}
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

	if in.cmd.format == "json" {
		if rerr != nil {
			return doc, errReported
		}
		return doc, nil
	}

	w := in.env.stdout
	in.header(w)
	fmt.Fprintf(w, "tools/resolve %s %s, %s shape\n\n", text.OneLine(op.tool), compactJSON(op.args), in.cmd.shape)
	if !listed {
		fmt.Fprintf(w, "note: tools/list has no tool %q\n\n", op.tool)
	}
	if rerr != nil {
		writeError(in.env.stderr, preflight.MethodResolve, rerr, rpcErr)
	} else {
		fmt.Fprintln(w, "result:")
		b, _ := json.MarshalIndent(res, "  ", "  ")
		fmt.Fprintf(w, "  %s\n\n", b)
	}
	if d != nil {
		in.writeDecision(w, tool, listed, d)
	}
	if derr != nil && d != nil {
		fmt.Fprintf(w, "warning: %s\n", errText(derr))
	}
	if rerr != nil {
		return doc, errReported
	}
	return doc, nil
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
	row(preflight.MetaEffect, cell(string(e.Effect.Value)), e.Effect.Source, cell(string(s.Effect.Value)))
	row(preflight.MetaIdempotent, e.IdempotentCall.Value, e.IdempotentCall.Source, s.IdempotentCall.Value)
	row(preflight.MetaRequiresConfirmation, e.RequiresConfirmation.Value, e.RequiresConfirmation.Source, s.RequiresConfirmation.Value)
	row(preflight.MetaResultSensitivity, cell(string(e.ResultSensitivity.Value)), e.ResultSensitivity.Source, cell(string(s.ResultSensitivity.Value)))
	// The two decisions, with the source of the value that settled them.
	retrySource := e.IdempotentCall.Source
	if e.ReadOnly.Value {
		retrySource = e.ReadOnly.Source
	}
	fmt.Fprintf(tw, "  confirm?\t%s\t%s\t%s\n", yesNo(d.NeedsConfirmation()), e.RequiresConfirmation.Source, yesNo(s.NeedsConfirmation()))
	fmt.Fprintf(tw, "  safe to retry?\t%s\t%s\t%s\n", yesNo(d.SafeToRetry()), retrySource, yesNo(s.SafeToRetry()))
	tw.Flush()
	for _, sc := range d.SecuritySchemes {
		fmt.Fprintf(w, "  security scheme: %s %s\n", text.OneLine(sc.Type), text.OneLine(strings.Join(sc.Scopes, " ")))
	}
	fmt.Fprintln(w)
}

// callDoc is the JSON output of the call operation.
type callDoc struct {
	Op        string         `json:"op"`
	Server    serverView     `json:"server"`
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
	Shape     string         `json:"shape"`
	Listed    bool           `json:"listed"`
	Decision  *decisionView  `json:"decision,omitempty"`
	Warning   string         `json:"warning,omitempty"`
	Confirmed bool           `json:"confirmed"`
	Refused   string         `json:"refused,omitempty"`
	// Questions are the server's questions during the call, with the
	// answers given.
	Questions []questionView      `json:"questions,omitempty"`
	Result    *mcp.CallToolResult `json:"result,omitempty"`
	Error     any                 `json:"error,omitempty"`
	// Hint says what to do about a tool error the command understands.
	Hint string `json:"hint,omitempty"`
}

func (in *inspection) call(ctx context.Context, op inspectOp) (any, error) {
	tool, listed, err := in.lookupTool(ctx, op.tool)
	if err != nil {
		return nil, in.fail(err, func(w io.Writer) { fmt.Fprintln(w, errText(err)) })
	}
	doc := &callDoc{Op: "call", Server: in.server(), Tool: op.tool, Arguments: op.args, Shape: in.cmd.shape, Listed: listed}
	plain := in.cmd.format != "json"
	w := in.env.stdout
	if plain {
		in.header(w)
		fmt.Fprintf(w, "call %s %s, %s shape\n", text.OneLine(op.tool), compactJSON(op.args), in.cmd.shape)
		if !listed {
			fmt.Fprintf(w, "note: tools/list has no tool %q\n", op.tool)
		}
	}
	// In the seed shape the marker is invisible to the SDK, and a tool
	// missing from tools/list has none: resolve anyway, and let the server
	// say what it knows.
	opts := &resolve.ClientOptions{ResolveUnmarked: in.cmd.shape == shapeSeed || !listed}
	d, perr := resolve.Preflight(ctx, in.cs, tool, op.args, opts)
	if d == nil {
		e := rpcErrorOf(perr, preflight.MethodResolve)
		doc.Error = errorDoc(perr, e)
		return doc, in.fail(perr, func(w io.Writer) {
			writeError(w, preflight.MethodResolve, perr, e)
			fmt.Fprintf(w, "not called: %s\n", text.OneLine(op.tool))
		})
	}
	doc.Decision = viewDecision(d)
	if perr != nil {
		doc.Warning = perr.Error()
	}
	if plain {
		e := d.Effective
		fmt.Fprintf(w, "decision (%s): %s, effect %s, confirm? %s, safe to retry? %s\n",
			origin(d), annFlags(e.Annotations()), cell(string(e.Effect.Value)), yesNo(d.NeedsConfirmation()), yesNo(d.SafeToRetry()))
		if perr != nil {
			fmt.Fprintf(w, "warning: %s\n", errText(perr))
		}
	}
	if d.NeedsConfirmation() {
		if !in.cmd.yes {
			e := d.Effective.RequiresConfirmation
			doc.Refused = fmt.Sprintf("the call needs confirmation (%s %t, %s); run again with -yes to confirm it", preflight.MetaRequiresConfirmation, e.Value, e.Source)
			return doc, in.fail(nil, func(w io.Writer) { fmt.Fprintf(w, "refused: %s\n", doc.Refused) })
		}
		doc.Confirmed = true
		if plain {
			fmt.Fprintln(w, "confirmed with -yes")
		}
	}

	in.questions = nil
	res, cerr := d.Call(ctx, in.cs)
	doc.Questions = in.questions
	if cerr != nil {
		e := rpcErrorOf(cerr, "tools/call")
		doc.Error = errorDoc(cerr, e)
		return doc, in.fail(cerr, func(w io.Writer) { writeError(w, "tools/call", cerr, e) })
	}
	doc.Result = res
	if de, ok := disclose.ResultError(res); ok && de.Code == disclose.CodeToolDescriptionRequired {
		uri := de.ResourceURI
		if !strings.Contains(uri, "?") {
			uri = disclose.SelectionURI(cmp.Or(uri, disclose.DefaultURI), op.tool)
		}
		doc.Hint = fmt.Sprintf("the server discloses its tools progressively: read the tool's description first, in the same run: preflight inspect read '%s' call %s '%s' ...",
			uri, op.tool, compactJSON(op.args))
	}
	if plain {
		if res.IsError {
			fmt.Fprintln(w, "\ntool error:")
		} else {
			fmt.Fprintln(w, "\nresult:")
		}
		fmt.Fprint(w, indent(contentText(res), "  "))
		if doc.Hint != "" {
			fmt.Fprintf(w, "hint: %s\n", text.OneLine(doc.Hint))
		}
	}
	if res.IsError {
		return doc, errReported
	}
	return doc, nil
}

// readDoc is the JSON output of the read operation.
type readDoc struct {
	Op     string                  `json:"op"`
	Server serverView              `json:"server"`
	URI    string                  `json:"uri"`
	Result *mcp.ReadResourceResult `json:"result,omitempty"`
	Error  any                     `json:"error,omitempty"`
	Hint   string                  `json:"hint,omitempty"`
	// Questions are the server's questions during the read.
	Questions []questionView `json:"questions,omitempty"`
}

func (in *inspection) read(ctx context.Context, op inspectOp) (any, error) {
	doc := &readDoc{Op: "read", Server: in.server(), URI: op.uri}
	in.questions = nil
	res, err := in.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: op.uri})
	doc.Questions = in.questions
	if err != nil {
		e := rpcErrorOf(err, "resources/read")
		doc.Error = errorDoc(err, e)
		if de, ok := disclose.ErrorOf(err); ok && de.Code == disclose.CodeMissingToolSelection {
			doc.Hint = fmt.Sprintf("name the tools: read '%s'", disclose.SelectionURI(op.uri, "TOOL"))
		}
		return doc, in.fail(err, func(w io.Writer) {
			writeError(w, "resources/read", err, e)
			if doc.Hint != "" {
				fmt.Fprintf(w, "  hint: %s\n", text.OneLine(doc.Hint))
			}
		})
	}
	doc.Result = res
	if in.cmd.format == "json" {
		return doc, nil
	}
	w := in.env.stdout
	in.header(w)
	fmt.Fprintf(w, "resources/read %s: %d contents\n", text.OneLine(op.uri), len(res.Contents))
	for _, c := range res.Contents {
		if c == nil {
			continue
		}
		fmt.Fprintf(w, "\n%s (%s):\n", text.OneLine(c.URI), cell(c.MIMEType))
		switch {
		case c.Blob != nil:
			fmt.Fprintf(w, "  [blob, %d bytes]\n", len(c.Blob))
		default:
			fmt.Fprint(w, indent(prettyJSON(c.Text), "  "))
		}
	}
	return doc, nil
}

// prettyJSON indents s when it is a JSON object or array, else returns it.
func prettyJSON(s string) string {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "{") && !strings.HasPrefix(t, "[") {
		return s
	}
	var v any
	if json.Unmarshal([]byte(t), &v) != nil {
		return s
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return s
	}
	return string(b)
}

// indent prefixes every line of s, which ends with a newline.
func indent(s, prefix string) string {
	if s == "" {
		return ""
	}
	s = strings.TrimSuffix(s, "\n")
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix) + "\n"
}

// errorDoc is err for JSON output: the JSON-RPC error if it is one,
// else its message.
func errorDoc(err error, e *rpcError) any {
	if e != nil {
		return e
	}
	return map[string]string{"message": errText(err)}
}

// writeError writes err, answered to method, for a person.
func writeError(w io.Writer, method string, err error, e *rpcError) {
	if e != nil {
		writeRPCError(w, method, e)
		return
	}
	if errors.Is(err, resolve.ErrResolutionFailed) {
		fmt.Fprintf(w, "%s: %s\n  hint: the client cannot trust this call's annotations; call it only if you know what it does\n", method, errText(err))
		return
	}
	fmt.Fprintf(w, "%s: %s\n", method, errText(err))
}

// Questions: elicitations during a call.

// questionView is a question the server asked and the answer given.
type questionView struct {
	Message string `json:"message"`
	Mode    string `json:"mode,omitempty"`
	URL     string `json:"url,omitempty"`
	// Action is accept, decline or cancel; Content the accepted answer.
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
	// By says where the answer came from: -answer, -decline, -cancel or
	// the terminal.
	By string `json:"answeredBy"`
}

// elicit answers an elicitation: from -answer, -decline or -cancel, else
// on the terminal. Questions are answered one at a time.
func (in *inspection) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	p := req.Params
	q := questionView{Message: p.Message, Mode: p.Mode, URL: p.URL}
	switch {
	case len(in.answers) > 0:
		q.Action, q.Content, q.By = "accept", in.answers[0], "-answer"
		in.answers = in.answers[1:]
	case in.cmd.decline:
		q.Action, q.By = "decline", "-decline"
	case in.cmd.cancel:
		q.Action, q.By = "cancel", "-cancel"
	default:
		q.By = "terminal"
		var err error
		if q.Action, q.Content, err = in.prompt(ctx, p); err != nil {
			return nil, err
		}
	}
	in.questions = append(in.questions, q)
	if in.cmd.format != "json" {
		w := in.env.stdout
		fmt.Fprintf(w, "question: %s\n", text.OneLine(p.Message))
		if p.URL != "" {
			fmt.Fprintf(w, "  url: %s\n", text.OneLine(p.URL))
		}
		answer := q.Action
		if q.Content != nil {
			answer += " " + compactJSON(q.Content)
		}
		fmt.Fprintf(w, "  answer (%s): %s\n", q.By, answer)
	}
	return &mcp.ElicitResult{Action: q.Action, Content: q.Content}, nil
}

// formField is one field of a requested form.
type formField struct {
	name        string
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Enum        []any  `json:"enum"`
	Default     any    `json:"default"`
	required    bool
}

// formFields reads a requested schema's top-level properties, required
// ones first, each group by name.
func formFields(schema any) []formField {
	var s struct {
		Properties map[string]formField `json:"properties"`
		Required   []string             `json:"required"`
	}
	b, err := json.Marshal(schema)
	if err != nil || json.Unmarshal(b, &s) != nil {
		return nil
	}
	var fields []formField
	for name, f := range s.Properties {
		f.name, f.required = name, slices.Contains(s.Required, name)
		fields = append(fields, f)
	}
	slices.SortFunc(fields, func(a, b formField) int {
		if a.required != b.required {
			if a.required {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	return fields
}

// maxTries bounds the prompts for one field before the question is
// cancelled.
const maxTries = 3

// prompt asks the question on the terminal (standard error for the
// question, standard input for the answers).
func (in *inspection) prompt(ctx context.Context, p *mcp.ElicitParams) (action string, content map[string]any, err error) {
	w := in.env.stderr
	fmt.Fprintf(w, "\nThe server asks: %s\n", text.OneLine(p.Message))
	if p.Mode == "url" || p.URL != "" {
		fmt.Fprintf(w, "  open: %s\n", text.OneLine(p.URL))
		line, ok, err := in.ask(ctx, "  accept (you opened it)? [y/N]: ")
		switch {
		case err != nil:
			return "", nil, err
		case !ok:
			return "cancel", nil, nil
		case yes(line):
			return "accept", nil, nil
		}
		return "decline", nil, nil
	}
	fields := formFields(p.RequestedSchema)
	fmt.Fprintln(w, "  (an empty answer to a required field declines; the end of the input cancels)")
	if len(fields) == 0 {
		line, ok, err := in.ask(ctx, "  accept? [y/N]: ")
		switch {
		case err != nil:
			return "", nil, err
		case !ok:
			return "cancel", nil, nil
		case yes(line):
			return "accept", map[string]any{}, nil
		}
		return "decline", nil, nil
	}
	content = map[string]any{}
	for _, f := range fields {
		label := f.name
		about := f.Type
		if f.required {
			about += ", required"
		}
		if len(f.Enum) > 0 {
			about += ", one of " + text.OneLine(compactJSON(f.Enum))
		}
		if f.Default != nil {
			about += ", default " + text.OneLine(compactJSON(f.Default))
		}
		desc := text.OneLine(cmp.Or(f.Description, f.Title))
		if desc != "" {
			desc = ": " + desc
		}
		fmt.Fprintf(w, "  %s (%s)%s\n", text.OneLine(label), about, desc)
		for try := 0; ; try++ {
			if try == maxTries {
				fmt.Fprintln(w, "  too many invalid answers: cancelled")
				return "cancel", nil, nil
			}
			line, ok, err := in.ask(ctx, "  "+text.OneLine(label)+"> ")
			if err != nil {
				return "", nil, err
			}
			if !ok {
				return "cancel", nil, nil
			}
			if line == "" {
				switch {
				case f.Default != nil:
					content[f.name] = f.Default
				case f.required:
					return "decline", nil, nil
				}
				break
			}
			v, perr := parseAnswer(f, line)
			if perr != nil {
				fmt.Fprintf(w, "  %v\n", perr)
				continue
			}
			content[f.name] = v
			break
		}
	}
	return "accept", content, nil
}

// ask writes a prompt and reads one line: ok is false at the end of the
// input. It returns when ctx ends, even if the read is still waiting.
func (in *inspection) ask(ctx context.Context, prompt string) (line string, ok bool, err error) {
	fmt.Fprint(in.env.stderr, prompt)
	in.env.stderr.Flush()
	type answer struct {
		line string
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		l, err := in.stdin.ReadString('\n')
		ch <- answer{l, err}
	}()
	select {
	case <-ctx.Done():
		return "", false, ctx.Err()
	case a := <-ch:
		if a.err != nil && a.line == "" {
			fmt.Fprintln(in.env.stderr)
			return "", false, nil
		}
		return strings.TrimSpace(a.line), true, nil
	}
}

// parseAnswer reads a typed value for field f.
func parseAnswer(f formField, s string) (any, error) {
	var v any
	switch f.Type {
	case "boolean":
		switch strings.ToLower(s) {
		case "y", "yes", "true", "1":
			v = true
		case "n", "no", "false", "0":
			v = false
		default:
			return nil, fmt.Errorf("want yes or no")
		}
	case "integer":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("want a whole number")
		}
		v = n
	case "number":
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("want a number")
		}
		v = x
	default:
		v = s
	}
	if len(f.Enum) > 0 && !slices.ContainsFunc(f.Enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) }) {
		return nil, fmt.Errorf("want one of %s", text.OneLine(compactJSON(f.Enum)))
	}
	return v, nil
}

func yes(s string) bool {
	switch strings.ToLower(s) {
	case "y", "yes":
		return true
	}
	return false
}
