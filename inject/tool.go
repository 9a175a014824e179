package inject

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/requeststate"
)

// Options configure an [Injector]. The zero value is ready to use.
type Options struct {
	// Ring seals the requestState of 2026-07-28 rounds. Nil means a ring
	// with one random key for this process: state then does not survive a
	// restart or reach another replica; give replicas a shared ring.
	Ring *requeststate.Ring
	// Audience binds sealed state to this server, so that state from one
	// server is refused by another that shares its keys. Empty means
	// "preflight".
	Audience string
	// Logger receives the reasons requestState was refused and resolver
	// panics. Nil discards them.
	Logger *slog.Logger
	// QuestionTimeout bounds how long a question asked within a legacy
	// (2025-11-25) call waits for the client's answer; past it the
	// question is cancelled (notifications/cancelled) and the call ends
	// with a tool error that says so. The call's own end (the client
	// cancels it, the session closes) ends the wait sooner. Questions of
	// 2026-07-28 rounds hold nothing while they wait. Zero means
	// [DefaultQuestionTimeout].
	QuestionTimeout time.Duration
}

// DefaultQuestionTimeout is the default of [Options.QuestionTimeout]: a
// person filling a form has a few minutes.
const DefaultQuestionTimeout = 5 * time.Minute

// An Injector runs the resolvers of the tools added through it.
type Injector struct {
	ring     *requeststate.Ring
	audience string
	logger   *slog.Logger
	timeout  time.Duration
}

// NewInjector returns an Injector; opts may be nil.
func NewInjector(opts *Options) *Injector {
	if opts == nil {
		opts = &Options{}
	}
	inj := &Injector{ring: opts.Ring, audience: opts.Audience, logger: opts.Logger, timeout: opts.QuestionTimeout}
	if inj.timeout <= 0 {
		inj.timeout = DefaultQuestionTimeout
	}
	if inj.ring == nil {
		inj.ring = requeststate.Default()
	}
	if inj.audience == "" {
		inj.audience = "preflight"
	}
	if inj.logger == nil {
		inj.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return inj
}

// A Request is a tool call as a tool body sees it. It deliberately has no
// input responses or request state: a tool with resolvers cannot drive an
// input_required flow of its own, since one call has one such channel.
type Request struct {
	Session *mcp.ServerSession
	// Name is the tool's name.
	Name string
	// Arguments are the validated arguments, without resolved parameters.
	Arguments map[string]any
	Meta      mcp.Meta
	Extra     *mcp.RequestExtra
}

// A ToolHandler is the body of a tool with resolved parameters: in holds
// the arguments and the resolvers' values. An error is reported to the
// client as a tool error (isError), except a *jsonrpc.Error, which is
// sent as it is.
type ToolHandler[In any] func(ctx context.Context, req *Request, in In) (*mcp.CallToolResult, error)

// AddTool adds to s a tool whose parameters tagged inject:"NAME" in In are
// filled by the resolvers given. See [Tool].
func AddTool[In any](s *mcp.Server, inj *Injector, t *mcp.Tool, h ToolHandler[In], resolvers ...*Resolver) {
	tt, th := Tool(inj, t, h, resolvers...)
	s.AddTool(tt, th)
}

// Tool returns the tool definition and the raw handler of a tool with
// resolved parameters, for [mcp.Server.AddTool] or for any wrapper that
// takes them (such as resolve.Server.AddTool, to make the tool resolvable
// too: tools/resolve never runs these resolvers).
//
// If t has no input schema, it is inferred from In; either way the
// resolved parameters are removed from it. Tool panics on misuse, naming
// the resolver and the parameter: In not a struct, a cycle, an input with
// no source, an argument the schema lacks, a resolver not given, a type
// that does not fit.
func Tool[In any](inj *Injector, t *mcp.Tool, h ToolHandler[In], resolvers ...*Resolver) (*mcp.Tool, mcp.ToolHandler) {
	fail := func(err error) { panic(fmt.Errorf("inject.Tool %q: %w", t.Name, err)) }
	toolIn := reflect.TypeFor[In]()
	if toolIn.Kind() != reflect.Struct {
		fail(fmt.Errorf("input type %v is not a struct", toolIn))
	}
	tt := *t
	var schema *jsonschema.Schema
	var err error
	if tt.InputSchema == nil {
		schema, err = jsonschema.ForType(toolIn, &jsonschema.ForOptions{})
	} else {
		err = remarshal(tt.InputSchema, &schema)
	}
	if err != nil || schema == nil {
		fail(fmt.Errorf("input schema: %v", err))
	}
	args := map[string]bool{}
	for name := range schema.Properties {
		args[name] = true
	}
	p, err := buildPlan(t.Name, toolIn, args, resolvers)
	if err != nil {
		fail(err)
	}
	for _, name := range p.injectedArgs {
		delete(schema.Properties, name)
		schema.Required = slices.DeleteFunc(schema.Required, func(r string) bool { return r == name })
	}
	resolved, err := schema.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		fail(fmt.Errorf("input schema: %v", err))
	}
	tt.InputSchema = schema
	return &tt, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return handle(ctx, inj, p, resolved, h, req)
	}
}

func handle[In any](ctx context.Context, inj *Injector, p *plan, schema *jsonschema.Resolved, h ToolHandler[In], req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args map[string]any
	if raw := req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &args); err != nil {
			return toolResult(&toolError{"arguments must be a JSON object"}), nil
		}
	}
	args = p.cloneArgs(args) // a value sent for a resolved parameter is ignored
	if err := schema.ApplyDefaults(&args); err != nil {
		return toolResult(&toolError{fmt.Sprintf("arguments: %v", err)}), nil
	}
	if err := schema.Validate(args); err != nil {
		return toolResult(&toolError{fmt.Sprintf("validating arguments: %v", err)}), nil
	}
	c := &call{
		plan:      p,
		session:   req.Session,
		caps:      req.ClientCapabilities(),
		args:      args,
		stateless: req.ProtocolVersion() >= preflight.ProtocolStateless,
		timeout:   inj.timeout,
	}
	if c.stateless {
		payload, err := inj.ring.OpenRequest(req, inj.audience)
		if err == nil && payload != nil {
			err = json.Unmarshal(payload, &c.prev)
		}
		if err != nil {
			inj.logger.WarnContext(ctx, "tools/call: requestState refused", "tool", p.tool, "reason", err)
			return nil, requeststate.WireError(err)
		}
		if payload != nil {
			c.responses = req.Params.InputResponses
		}
		// Answers that arrive without state are discarded: nothing
		// records them as asked.
	}

	err := c.run(ctx)
	var te *toolError
	switch {
	case errors.Is(err, errPending):
		payload, err := json.Marshal(c.next)
		if err != nil {
			return nil, err
		}
		token, err := inj.ring.SealRequest(req, inj.audience, payload)
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{InputRequests: c.pending, RequestState: token}, nil
	case errors.As(err, &te):
		return toolResult(te), nil
	case err != nil:
		return nil, err
	}

	var in In
	if err := remarshal(args, &in); err != nil {
		return toolResult(&toolError{fmt.Sprintf("arguments do not fit the tool's input: %v", err)}), nil
	}
	v := reflect.ValueOf(&in).Elem()
	for _, param := range p.params {
		where := fmt.Sprintf("parameter %s", param.name)
		if err := c.fill(v.Field(param.index), param, where); err != nil {
			return toolResult(err), nil
		}
	}
	res, err := h(ctx, &Request{Session: req.Session, Name: req.Params.Name, Arguments: args, Meta: req.Params.Meta, Extra: req.Extra}, in)
	var we *jsonrpc.Error
	switch {
	case errors.As(err, &we):
		return nil, we
	case err != nil:
		return toolResult(err), nil
	case res == nil:
		res = &mcp.CallToolResult{Content: []mcp.Content{}}
	case res.InputRequests != nil || res.RequestState != "":
		return nil, &jsonrpc.Error{Code: preflight.CodeInternalError,
			Message: fmt.Sprintf("tool %q returned input requests of its own; a tool with resolvers cannot drive its own input_required flow", p.tool)}
	}
	return res, nil
}

// toolResult is a tool error result carrying err's message.
func toolResult(err error) *mcp.CallToolResult {
	var res mcp.CallToolResult
	res.SetError(err)
	return &res
}
