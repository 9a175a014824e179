package inject

//lint:file-ignore SA1019 inject asks sampling and roots questions for as long as clients still declare them (deprecated by protocol 2026-07-28, SEP-2577).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// roundState is what one round hands the next, sealed in requestState:
// the questions asked in it and the outcomes recorded so far, each with the
// digest of the question as it was rendered. Computed values never enter
// it.
type roundState struct {
	Asked    map[string]string  `json:"a,omitempty"`
	Outcomes map[string]outcome `json:"o,omitempty"`
}

type outcome struct {
	Digest string          `json:"d"`
	Result json.RawMessage `json:"r"`
}

func (s *roundState) record(key, digest string, result json.RawMessage) {
	if s.Outcomes == nil {
		s.Outcomes = map[string]outcome{}
	}
	s.Outcomes[key] = outcome{Digest: digest, Result: result}
}

func (s *roundState) ask(key, digest string) {
	if s.Asked == nil {
		s.Asked = map[string]string{}
	}
	s.Asked[key] = digest
}

// A call is one tools/call request being resolved.
type call struct {
	plan      *plan
	session   *mcp.ServerSession
	caps      *mcp.ClientCapabilities
	args      map[string]any
	stateless bool
	timeout   time.Duration // of one legacy question

	// 2026-07-28 rounds.
	prev      roundState
	responses mcp.InputResponseMap
	next      roundState
	pending   mcp.InputRequestMap

	values map[*node]any
}

type status int

const (
	notRun status = iota
	done
	waiting
)

// run visits every resolver once, dependencies first. It returns nil when
// all values are known, errPending when questions are pending (in
// c.pending), a *toolError or a *jsonrpc.Error otherwise.
func (c *call) run(ctx context.Context) error {
	st := make(map[*node]status, len(c.plan.order))
	c.values = make(map[*node]any, len(c.plan.order))
	for _, n := range c.plan.order {
		blocked := false
		for _, d := range n.deps {
			blocked = blocked || st[d] != done
		}
		if blocked {
			st[n] = waiting // asks nothing until its inputs are known
			continue
		}
		in, err := c.inputs(n)
		if err != nil {
			return err
		}
		out, err := c.runOne(ctx, n, in)
		switch {
		case errors.Is(err, errPending):
			st[n] = waiting
		case err != nil:
			return err
		default:
			c.values[n] = out
			st[n] = done
		}
	}
	if len(c.pending) > 0 {
		return errPending
	}
	return nil
}

// inputs builds n's input struct.
func (c *call) inputs(n *node) (reflect.Value, error) {
	v := reflect.New(n.r.in).Elem()
	for _, in := range n.inputs {
		where := fmt.Sprintf("resolver %q, input %s", n.key, in.name)
		if err := c.fill(v.Field(in.index), in, where); err != nil {
			return reflect.Value{}, err
		}
	}
	return v, nil
}

// fill sets field from a tool argument or a resolver's value.
func (c *call) fill(field reflect.Value, in input, where string) error {
	if in.arg != "" {
		a, ok := c.args[in.arg]
		if !ok {
			return nil // an optional argument left out: the zero value
		}
		if err := remarshal(a, field.Addr().Interface()); err != nil {
			return &toolError{fmt.Sprintf("%s: argument %q does not fit: %v", where, in.arg, err)}
		}
		return nil
	}
	val := c.values[in.dep]
	if in.unwrap {
		action, data := val.(elicitedOutcome).outcome()
		if action != Accept {
			return &toolError{fmt.Sprintf("%s: the user answered %q (%s) to the question of resolver %q", where, action, describeAction(action), in.dep.key)}
		}
		val = data
	}
	if val != nil {
		field.Set(reflect.ValueOf(val))
	}
	return nil
}

func describeAction(a Action) string {
	switch a {
	case Decline:
		return "declined"
	case Cancel:
		return "cancelled"
	}
	return "not accepted"
}

// runOne runs one resolver body, turning a panic into a tool error.
func (c *call) runOne(ctx context.Context, n *node, in reflect.Value) (out any, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, &toolError{fmt.Sprintf("resolver %q failed: panic: %v", n.key, p)}
		}
	}()
	out, err = n.r.call(context.WithValue(ctx, askerKey{}, &asker{c: c, n: n}), in)
	var te *toolError
	var we *jsonrpc.Error
	if err != nil && !errors.Is(err, errPending) && !errors.As(err, &te) && !errors.As(err, &we) {
		err = &toolError{fmt.Sprintf("resolver %q: %v", n.key, err)}
	}
	return out, err
}

// answer returns the answer to n's question q: asked now (legacy), or
// from this round's responses or an earlier round's record (2026-07-28),
// or errPending after adding q to this round's questions.
func (c *call) answer(ctx context.Context, n *node, q *question) (json.RawMessage, error) {
	if !c.stateless {
		if err := c.gate(q); err != nil {
			return nil, err
		}
		return c.askNow(ctx, n, q)
	}
	if o, ok := c.prev.Outcomes[n.key]; ok && o.Digest == q.digest {
		if stillValid(q, o.Result) {
			c.next.record(n.key, q.digest, o.Result)
			return o.Result, nil
		}
		// The form changed under a stored answer: ask again.
	}
	if c.prev.Asked[n.key] == q.digest {
		if resp, ok := c.responses[n.key]; ok {
			raw, err := accept(n, q, resp)
			if err != nil {
				return nil, err
			}
			c.next.record(n.key, q.digest, raw)
			return raw, nil
		}
	}
	if err := c.gate(q); err != nil {
		return nil, err
	}
	if c.pending == nil {
		c.pending = mcp.InputRequestMap{}
	}
	c.pending[n.key] = q.params
	c.next.ask(n.key, q.digest)
	return nil, errPending
}

// accept checks a client's answer to q and returns it as JSON.
func accept(n *node, q *question, resp mcp.InputResponse) (json.RawMessage, error) {
	wrongKind := func(got string) error {
		return &toolError{fmt.Sprintf("the answer to resolver %q's question is %s, but the question was %s", n.key, got, q.kind)}
	}
	switch r := resp.(type) {
	case *mcp.ElicitResult:
		if q.kind != kindElicit {
			return nil, wrongKind("an elicitation result")
		}
		switch Action(r.Action) {
		case Accept:
			if r.Content == nil {
				return nil, &toolError{fmt.Sprintf("the answer to resolver %q's form accepts it without content", n.key)}
			}
			if err := q.schema.Validate(r.Content); err != nil {
				return nil, &toolError{fmt.Sprintf("the answer to resolver %q's form does not match the form's fields", n.key)}
			}
		case Decline, Cancel:
			r.Content = nil // content comes with accept only, and only validated
		default:
			return nil, &toolError{fmt.Sprintf("the answer to resolver %q's form has action %q; want accept, decline or cancel", n.key, r.Action)}
		}
	case *mcp.CreateMessageWithToolsResult, *mcp.CreateMessageResult:
		if q.kind != kindSample && q.kind != kindSampleWithTools {
			return nil, wrongKind("a sampling result")
		}
	case *mcp.ListRootsResult:
		if q.kind != kindRoots {
			return nil, wrongKind("a roots result")
		}
	default:
		return nil, wrongKind(fmt.Sprintf("%T", resp))
	}
	return json.Marshal(resp)
}

// stillValid reports whether a stored outcome still fits q: for a form,
// its data still validates against the live schema.
func stillValid(q *question, raw json.RawMessage) bool {
	if q.kind != kindElicit {
		return true
	}
	var r mcp.ElicitResult
	if json.Unmarshal(raw, &r) != nil {
		return false
	}
	return Action(r.Action) != Accept || (r.Content != nil && q.schema.Validate(r.Content) == nil)
}

// askNow sends q to the client as a real request (legacy sessions) and
// checks the answer as an answer in a round is checked. It waits at most
// c.timeout, and no longer than the call or its session lasts.
func (c *call) askNow(ctx context.Context, n *node, q *question) (json.RawMessage, error) {
	qctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var res mcp.InputResponse
	var err error
	switch p := q.params.(type) {
	case *mcp.ElicitParams:
		res, err = c.session.Elicit(qctx, p)
	case *mcp.CreateMessageParams:
		res, err = c.session.CreateMessage(qctx, p)
	case *mcp.CreateMessageWithToolsParams:
		res, err = c.session.CreateMessageWithTools(qctx, p)
	case *mcp.ListRootsParams:
		res, err = c.session.ListRoots(qctx, p)
	}
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(qctx.Err(), context.DeadlineExceeded):
			return nil, &toolError{fmt.Sprintf("resolver %q: the client did not answer %s within %v", n.key, q.kind, c.timeout)}
		}
		return nil, &toolError{fmt.Sprintf("resolver %q: the client could not answer %s: %v", n.key, q.kind, err)}
	}
	return accept(n, q, res)
}

// gate returns -32021 if the client did not declare what q needs.
func (c *call) gate(q *question) error {
	caps := c.caps
	if caps == nil {
		caps = &mcp.ClientCapabilities{}
	}
	var need map[string]any
	switch q.kind {
	case kindElicit:
		if e := caps.Elicitation; e == nil || (e.Form == nil && e.URL != nil) {
			need = map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}
		}
	case kindSample:
		if caps.Sampling == nil {
			need = map[string]any{"sampling": map[string]any{}}
		}
	case kindSampleWithTools:
		if caps.Sampling == nil || caps.Sampling.Tools == nil {
			need = map[string]any{"sampling": map[string]any{"tools": map[string]any{}}}
		}
	case kindRoots:
		if caps.RootsV2 == nil {
			need = map[string]any{"roots": map[string]any{}}
		}
	}
	if need == nil {
		return nil
	}
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": need})
	names := strings.Join(sortedKeys(need), ", ")
	return &jsonrpc.Error{
		Code:    mcp.CodeMissingRequiredClientCapabilities,
		Message: fmt.Sprintf("tool %q needs to ask the client (%s), but the client did not declare the %s capability on this request", c.plan.tool, q.kind, names),
		Data:    data,
	}
}

// cloneArgs returns a copy of args without the resolved parameters.
func (p *plan) cloneArgs(args map[string]any) map[string]any {
	out := maps.Clone(args)
	if out == nil {
		out = map[string]any{}
	}
	for _, name := range p.injectedArgs {
		delete(out, name)
	}
	return out
}
