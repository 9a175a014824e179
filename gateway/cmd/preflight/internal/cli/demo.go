package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/examples/files/filetool"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/resolve"
)

// The demo's sample file and the contents its calls write.
const (
	demoFile    = "notes.txt"
	demoContent = "hello from preflight\n"
)

// demoArguments are the arguments of the demo's call for action.
func demoArguments(action string) map[string]any {
	args := map[string]any{"path": demoFile, "action": action}
	switch action {
	case "append":
		args["content"] = "one more line\n"
	case "replace":
		args["content"] = "replaced\n"
	}
	return args
}

type demoCmd struct {
	common
	era string
}

func (c *demoCmd) synopsis() string {
	return `usage: preflight demo [-format text|json] [-era 2026-07-28|2025-11-25]

Runs seed 000's manage_files tool (examples/files) in this process on a fresh
temporary directory holding one file, notes.txt, and connects a client to it
over streamable HTTP on 127.0.0.1. For each action (read, append, replace,
delete) the client lists the tool, resolves the call with tools/resolve,
decides whether it needs confirmation and is safe to retry, and makes the
call; confirmations are approved automatically. Prints a table of static
versus resolved annotations and what the client decided. Everything is
removed on exit.

Exit status: 0 done; 2 usage error; 3 the demo could not run.
`
}

func (c *demoCmd) flags(fs *flag.FlagSet) {
	c.bindOutput(fs, []string{"text", "json"}, "json")
	c.bindTimeout(fs)
	fs.StringVar(&c.era, "era", preflight.ProtocolStateless,
		"protocol version: "+preflight.ProtocolStateless+" (no sessions) or "+preflight.ProtocolLegacy+" (initialize and a session)")
}

func (c *demoCmd) run(ctx context.Context, env *env, inv invocation) error {
	if len(inv.args) > 0 || inv.dashDash {
		return usagef("demo takes no arguments")
	}
	if c.era != preflight.ProtocolStateless && c.era != preflight.ProtocolLegacy {
		return usagef("-era %q: want %s or %s", c.era, preflight.ProtocolStateless, preflight.ProtocolLegacy)
	}
	rep, err := runDemo(ctx, c.era)
	if err != nil {
		return couldNotRun(err)
	}
	if c.format == "json" {
		return writeJSON(env.stdout, rep)
	}
	return rep.writeText(env.stdout)
}

// demoReport is the outcome of a demo run, and its JSON output.
type demoReport struct {
	ProtocolVersion string `json:"protocolVersion"`
	Transport       string `json:"transport"`
	Tool            string `json:"tool"`
	File            string `json:"file"`
	// Static is what tools/list says of the tool, the same for every call.
	Static struct {
		Annotations       preflight.Annotations `json:"annotations"`
		Hints             map[string]any        `json:"hints,omitempty"`
		Resolvable        bool                  `json:"resolvable"`
		NeedsConfirmation bool                  `json:"needsConfirmation"`
		SafeToRetry       bool                  `json:"safeToRetry"`
	} `json:"static"`
	Steps []demoStep `json:"steps"`

	staticHints hints.Hints
}

// demoStep is one action: its decision and its call.
type demoStep struct {
	Action       string         `json:"action"`
	Arguments    map[string]any `json:"arguments"`
	Decision     *decisionView  `json:"decision"`
	AutoApproved bool           `json:"autoApproved"`
	Result       struct {
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
	} `json:"result"`
}

// runDemo serves manage_files on a temporary directory, walks a client
// through every action, and cleans everything up before returning.
func runDemo(ctx context.Context, era string) (rep *demoReport, err error) {
	dir, err := os.MkdirTemp("", "preflight-demo-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, demoFile), []byte(demoContent), 0o644); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()

	// The server: the example behind the endpoint that serves both eras,
	// on a loopback port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	url := "http://" + ln.Addr().String() + endpoint.Path
	serveCtx, stopServing := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() {
		served <- endpoint.Serve(serveCtx, ln, endpoint.NewHandler(filetool.NewServer(root, nil), nil))
	}()
	defer func() {
		stopServing()
		if serr := <-served; serr != nil && err == nil {
			rep, err = nil, fmt.Errorf("server: %w", serr)
		}
	}()

	// The client: declares the tool-resolution extension, talks HTTP
	// through its own transport so that nothing outlives the demo.
	httpTransport := &http.Transport{}
	defer httpTransport.CloseIdleConnections()
	client := resolve.NewClient(&mcp.Implementation{Name: "preflight-demo", Version: version}, nil)
	cs, err := client.Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: httpTransport}},
		&mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ProtocolVersion; got != era {
		return nil, fmt.Errorf("connect: negotiated protocol %s, asked for %s", got, era)
	}

	rep = &demoReport{ProtocolVersion: era, Transport: "streamable HTTP", Tool: filetool.Name, File: demoFile}
	tool, err := findTool(ctx, cs, filetool.Name)
	if err != nil {
		return nil, err
	}
	if tool == nil {
		return nil, fmt.Errorf("tools/list: no tool %s", filetool.Name)
	}
	rep.Static.Annotations = preflight.AnnotationsOf(tool.Annotations)
	rep.staticHints, _ = hints.Read(tool.Meta)
	if !rep.staticHints.IsZero() {
		rep.Static.Hints = rep.staticHints.Write(nil)
	}
	rep.Static.Resolvable = preflight.IsResolvable(tool)
	static := staticEffective(tool)
	rep.Static.NeedsConfirmation, rep.Static.SafeToRetry = static.NeedsConfirmation(), static.SafeToRetry()

	for _, action := range filetool.Actions {
		step := demoStep{Action: action, Arguments: demoArguments(action)}
		d, err := resolve.Preflight(ctx, cs, tool, step.Arguments, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", action, err)
		}
		step.Decision = viewDecision(d)
		// A real client would ask the user here; the demo says yes.
		step.AutoApproved = d.NeedsConfirmation()
		res, err := d.Call(ctx, cs)
		if err != nil {
			return nil, fmt.Errorf("%s: tools/call: %w", action, err)
		}
		step.Result.IsError, step.Result.Text = res.IsError, contentText(res)
		rep.Steps = append(rep.Steps, step)
	}
	if err := cs.Close(); err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
		return nil, fmt.Errorf("close: %w", err)
	}
	return rep, nil
}

// findTool returns the tool called name from tools/list, or nil.
func findTool(ctx context.Context, cs *mcp.ClientSession, name string) (*mcp.Tool, error) {
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		if t.Name == name {
			return t, nil
		}
	}
	return nil, nil
}

func eraDescription(era string) string {
	if era >= preflight.ProtocolStateless {
		return era + ": no session, server/discover, capabilities on every request"
	}
	return era + ": initialize handshake, then a session"
}

// writeText writes the report as a table and a paragraph.
func (r *demoReport) writeText(w io.Writer) error {
	fmt.Fprintf(w, "%s (seed 000) on a temporary directory holding %s,\n", r.Tool, r.File)
	fmt.Fprintf(w, "server and client in this process, %s on 127.0.0.1,\n", r.Transport)
	fmt.Fprintf(w, "protocol %s.\n", eraDescription(r.ProtocolVersion))
	if len(r.Steps) > 0 && r.Steps[0].Decision.Resolved {
		fmt.Fprintf(w, "tools/resolve answers in the %s shape.\n", r.Steps[0].Decision.Shape)
	}
	fmt.Fprintf(w, "\ntools/list declares one worst case for every action: %s, %s.\n\n",
		annFlags(r.Static.Annotations), hintsText(r.staticHints))

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ACTION\tSTATIC\tRESOLVED\tEFFECT\tCONFIRM?\tRETRY?\tRESULT")
	for _, s := range r.Steps {
		d := s.Decision
		resolved := annFlags(d.Effective.Annotations())
		if !d.Resolved {
			resolved = "(not resolved)"
		}
		confirm := yesNo(d.NeedsConfirmation)
		if s.AutoApproved {
			confirm = "yes, auto-approved"
		}
		result := shorten(s.Result.Text, 40)
		if s.Action == "read" && !s.Result.IsError {
			result = fmt.Sprintf("%q", shorten(s.Result.Text, 38))
		}
		if s.Result.IsError {
			result = "tool error: " + result
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Action, annFlags(r.Static.Annotations), resolved,
			d.Effective.Effect.Value, confirm, yesNo(d.SafeToRetry), result)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nSTATIC: from tools/list; RESOLVED: from tools/resolve for this call's arguments.\n")
	fmt.Fprintf(w, "flags: %s.\n\n", flagsLegend)
	_, err := io.WriteString(w, wrap(r.explanation(), 78))
	return err
}

// explanation says what the static worst case would have made the client
// do and what resolution changed.
func (r *demoReport) explanation() string {
	var confirmed, unconfirmed, retry []string
	for _, s := range r.Steps {
		a := s.Decision.Effective.Annotations()
		switch {
		case s.Decision.NeedsConfirmation:
			confirmed = append(confirmed, s.Action)
		case a.ReadOnlyHint:
			unconfirmed = append(unconfirmed, s.Action+" is read-only")
		case !a.DestructiveHint:
			unconfirmed = append(unconfirmed, s.Action+" is not destructive")
		default:
			unconfirmed = append(unconfirmed, s.Action+" needs no confirmation")
		}
		if s.Decision.SafeToRetry {
			retry = append(retry, s.Action)
		}
	}
	n := len(r.Steps)
	staticConfirm := 0
	if r.Static.NeedsConfirmation {
		staticConfirm = n
	}
	staticRetry := "none of them"
	if r.Static.SafeToRetry {
		staticRetry = "all of them"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "With only the static annotations from tools/list, a client must assume every call is the worst case (%s): it would have asked for confirmation %d times out of %d and known %s safe to retry. ",
		describeWorst(r.Static.Annotations, r.staticHints), staticConfirm, n, staticRetry)
	fmt.Fprintf(&b, "Resolving each call first, it asked %d times out of %d", len(confirmed), n)
	if len(confirmed) > 0 {
		fmt.Fprintf(&b, " (%s)", listWords(confirmed))
	}
	if len(unconfirmed) > 0 {
		fmt.Fprintf(&b, ", since %s", listWords(unconfirmed))
	}
	fmt.Fprintf(&b, ", and it knows that %s can be retried safely.", orNone(retry))
	return b.String()
}

func describeWorst(a preflight.Annotations, h hints.Hints) string {
	var parts []string
	switch {
	case a.ReadOnlyHint:
		parts = append(parts, "read-only")
	case a.DestructiveHint:
		parts = append(parts, "destructive")
	default:
		parts = append(parts, "a write")
	}
	if h.Effect != "" {
		parts = append(parts, "effect "+string(h.Effect))
	}
	if !a.IdempotentHint && !a.ReadOnlyHint {
		parts = append(parts, "not idempotent")
	}
	return strings.Join(parts, ", ")
}

func listWords(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

func orNone(words []string) string {
	if len(words) == 0 {
		return "none of them"
	}
	return listWords(words)
}

// version is the command's version, sent as the client's implementation
// version.
const version = "v0.1.0"
