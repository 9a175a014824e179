package inject

//lint:file-ignore SA1019 inject asks sampling and roots questions for as long as clients still declare them (deprecated by protocol 2026-07-28, SEP-2577).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// errPending is returned by a question that is asked in this round's
// input_required result; the resolver returns it as it is.
var errPending = errors.New("inject: question pending (return this error unchanged from the resolver)")

// questionKind is what a question asks for.
type questionKind int

const (
	kindElicit questionKind = iota
	kindSample
	kindSampleWithTools
	kindRoots
)

func (k questionKind) method() string {
	switch k {
	case kindElicit:
		return "elicitation/create"
	case kindRoots:
		return "roots/list"
	}
	return "sampling/createMessage"
}

// answer names what answers a question of kind k, after "an" or "a".
func (k questionKind) answer() string {
	switch k {
	case kindElicit:
		return "an elicitation"
	case kindRoots:
		return "a roots"
	}
	return "a sampling"
}

func (k questionKind) String() string {
	return map[questionKind]string{kindElicit: "an elicitation", kindSample: "a sampling request",
		kindSampleWithTools: "a sampling request with tools", kindRoots: "a roots request"}[k]
}

// A question is one rendered server-to-client request.
type question struct {
	kind   questionKind
	params mcp.InputRequest
	schema *jsonschema.Resolved // elicitation: the form's schema
	digest string
}

func newQuestion(kind questionKind, params mcp.InputRequest, schema *jsonschema.Resolved) (*question, error) {
	b, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("inject: rendering %s: %w", kind, err)
	}
	sum := sha256.Sum256(append([]byte(kind.method()+"\n"), b...))
	return &question{kind: kind, params: params, schema: schema, digest: hex.EncodeToString(sum[:16])}, nil
}

// asker answers the one question of one resolver run. It is in the
// context a resolver receives.
type asker struct {
	c     *call
	n     *node
	asked bool
}

type askerKey struct{}

func askerFrom(ctx context.Context) (*asker, error) {
	a, _ := ctx.Value(askerKey{}).(*asker)
	if a == nil {
		return nil, errors.New("inject: a question can only be asked from a resolver's body, with the context it was given")
	}
	return a, nil
}

// ask returns the raw answer to q, or errPending.
func (a *asker) ask(ctx context.Context, q *question) (json.RawMessage, error) {
	if a.asked {
		return nil, &toolError{fmt.Sprintf("resolver %q asks more than one question; a resolver may ask one", a.n.key)}
	}
	a.asked = true
	return a.c.answer(ctx, a.n, q)
}

// Elicit asks the user to fill a form built from T, a struct of primitive
// fields (their json names and jsonschema descriptions become the form's
// fields). It returns the outcome: accepted with the data, declined or
// cancelled. Call it from a resolver's body with the context the resolver
// was given, and return its error unchanged.
func Elicit[T any](ctx context.Context, message string) (Elicited[T], error) {
	var zero Elicited[T]
	schema, resolved, err := formSchema(reflect.TypeFor[T]())
	if err != nil {
		return zero, err
	}
	r, err := askFor[mcp.ElicitResult](ctx, kindElicit, &mcp.ElicitParams{Mode: "form", Message: message, RequestedSchema: schema}, resolved)
	if err != nil {
		return zero, err
	}
	out := Elicited[T]{Action: Action(r.Action)}
	if out.Action == Accept {
		if err := remarshal(r.Content, &out.Data); err != nil {
			return zero, &toolError{fmt.Sprintf("the answer to the form %q does not fit it", message)}
		}
	}
	return out, nil
}

// ElicitForm asks the user to fill a form with the given requested schema,
// for forms a Go struct cannot describe (defaults, titled enums,
// multiple choice). The accepted content is validated against schema and
// returned as it came. Call it as [Elicit].
func ElicitForm(ctx context.Context, message string, schema *jsonschema.Schema) (Elicited[map[string]any], error) {
	resolved, err := schema.Resolve(nil)
	if err != nil {
		return Elicited[map[string]any]{}, fmt.Errorf("inject: form schema: %w", err)
	}
	r, err := askFor[mcp.ElicitResult](ctx, kindElicit, &mcp.ElicitParams{Mode: "form", Message: message, RequestedSchema: schema}, resolved)
	if err != nil {
		return Elicited[map[string]any]{}, err
	}
	return Elicited[map[string]any]{Action: Action(r.Action), Data: r.Content}, nil
}

// ClientCapabilities returns what the client declared for this call (on
// the request under 2026-07-28, at initialize on a legacy session), for a
// resolver that asks only what the client can answer. It never returns
// nil: a client that declared nothing, or a context that is not a
// resolver's, gives empty capabilities.
func ClientCapabilities(ctx context.Context) *mcp.ClientCapabilities {
	if a, err := askerFrom(ctx); err == nil && a.c.caps != nil {
		return a.c.caps
	}
	return &mcp.ClientCapabilities{}
}

// Sample asks the client's model for one message. It has no decline arm:
// the client answers or the call fails.
//
// Deprecated: sampling is deprecated as of protocol version 2026-07-28
// (SEP-2577) and may be removed from the protocol from 2027-07-28; it
// keeps working with clients that declare it until then. Call an LLM
// provider's API from the resolver instead.
func Sample(ctx context.Context, params *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	return askFor[mcp.CreateMessageResult](ctx, kindSample, params, nil)
}

// SampleWithTools asks the client's model for one message, offering it
// tools; the client must have declared sampling.tools.
//
// Deprecated: sampling is deprecated as of protocol version 2026-07-28
// (SEP-2577), see [Sample]. Call an LLM provider's API from the resolver
// instead.
func SampleWithTools(ctx context.Context, params *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	return askFor[mcp.CreateMessageWithToolsResult](ctx, kindSampleWithTools, params, nil)
}

// ListRoots asks the client for its roots. It has no decline arm.
//
// Deprecated: roots are deprecated as of protocol version 2026-07-28
// (SEP-2577) and may be removed from the protocol from 2027-07-28; it
// keeps working with clients that declare them until then. Take the
// directories or files as tool arguments (an `arg:"..."` input), resource
// URIs or server configuration instead.
func ListRoots(ctx context.Context) (*mcp.ListRootsResult, error) {
	return askFor[mcp.ListRootsResult](ctx, kindRoots, &mcp.ListRootsParams{}, nil)
}

// askFor asks the question of the resolver running in ctx and decodes
// the answer into an R.
func askFor[R any](ctx context.Context, kind questionKind, params mcp.InputRequest, schema *jsonschema.Resolved) (*R, error) {
	a, err := askerFrom(ctx)
	if err != nil {
		return nil, err
	}
	q, err := newQuestion(kind, params, schema)
	if err != nil {
		return nil, err
	}
	raw, err := a.ask(ctx, q)
	if err != nil {
		return nil, err
	}
	var r R
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, &toolError{fmt.Sprintf("the answer to resolver %q's question is not %s answer", a.n.key, kind.answer())}
	}
	return &r, nil
}

var formSchemas sync.Map // reflect.Type -> *form

type form struct {
	schema   *jsonschema.Schema
	resolved *jsonschema.Resolved
	err      error
}

// formSchema returns the elicitation schema of t, cached.
func formSchema(t reflect.Type) (*jsonschema.Schema, *jsonschema.Resolved, error) {
	if f, ok := formSchemas.Load(t); ok {
		f := f.(*form)
		return f.schema, f.resolved, f.err
	}
	f := &form{}
	f.schema, f.err = jsonschema.ForType(t, &jsonschema.ForOptions{})
	if f.err == nil {
		f.schema.AdditionalProperties = nil // forms are flat objects; extra keys are not an error
		f.resolved, f.err = f.schema.Resolve(nil)
	}
	if f.err != nil {
		f.err = fmt.Errorf("inject: form type %v: %w", t, f.err)
	}
	formSchemas.Store(t, f)
	return f.schema, f.resolved, f.err
}

func remarshal(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}

// toolError ends the call with a tool error (isError) carrying msg.
type toolError struct{ msg string }

func (e *toolError) Error() string { return e.msg }
