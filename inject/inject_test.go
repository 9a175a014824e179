package inject_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/inject"
	"github.com/preflightmcp/preflight/internal/wiretest"
	"github.com/preflightmcp/preflight/requeststate"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type NameForm struct {
	Name string `json:"name" jsonschema:"your name"`
}

type MoodForm struct {
	Mood string `json:"mood" jsonschema:"how you feel"`
}

type Confirm struct {
	OK bool `json:"ok" jsonschema:"go ahead"`
}

type greetArgs struct {
	Greeting string                    `json:"greeting"`
	Name     NameForm                  `json:"-" inject:"name"`     // unwrapped: decline fails the call
	Mood     inject.Elicited[MoodForm] `json:"-" inject:"mood"`     // the whole outcome
	Go       bool                      `json:"go" inject:"confirm"` // sent by a client: ignored
}

// counters count resolver runs and tool bodies.
type counters struct{ name, mood, confirm, body atomic.Int32 }

func greetServer(_ testing.TB, cnt *counters) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "v1"}, nil)
	inj := inject.NewInjector(nil)
	name := inject.NewResolver("name", func(ctx context.Context, _ struct{}) (inject.Elicited[NameForm], error) {
		cnt.name.Add(1)
		return inject.Elicit[NameForm](ctx, "What is your name?")
	})
	mood := inject.NewResolver("mood", func(ctx context.Context, _ struct{}) (inject.Elicited[MoodForm], error) {
		cnt.mood.Add(1)
		return inject.Elicit[MoodForm](ctx, "How do you feel?")
	})
	// confirm is a chain: its question uses name's answer.
	confirm := inject.NewResolver("confirm", func(ctx context.Context, in struct {
		Name     NameForm `inject:"name"`
		Greeting string   `arg:"greeting"`
	}) (bool, error) {
		cnt.confirm.Add(1)
		ans, err := inject.Elicit[Confirm](ctx, fmt.Sprintf("Say %q to %s?", in.Greeting, in.Name.Name))
		if err != nil {
			return false, err
		}
		return ans.Accepted() && ans.Data.OK, nil
	})
	inject.AddTool(s, inj, &mcp.Tool{Name: "greet", Description: "greets"},
		func(_ context.Context, _ *inject.Request, in greetArgs) (*mcp.CallToolResult, error) {
			cnt.body.Add(1)
			text := "not greeted"
			if in.Go {
				text = fmt.Sprintf("%s, %s (%s: %s)", in.Greeting, in.Name.Name, in.Mood.Action, in.Mood.Data.Mood)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		}, name, mood, confirm)
	return s
}

var formCaps = map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}

func accept(content map[string]any) map[string]any {
	return map[string]any{"action": "accept", "content": content}
}

func keys(m map[string]any) []string {
	return slices.Sorted(maps.Keys(m))
}

func text(t *testing.T, r *wiretest.Response) (string, bool) {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("error %+v", r.Error)
	}
	c, _ := r.Result["content"].([]any)
	if len(c) == 0 {
		t.Fatalf("no content: %s", r.Raw)
	}
	isErr, _ := r.Result["isError"].(bool)
	return c[0].(map[string]any)["text"].(string), isErr
}

func TestRoundsStateless(t *testing.T) {
	var cnt counters
	hs := httptest.NewServer(endpoint.NewHandler(greetServer(t, &cnt), nil))
	defer hs.Close()
	p := wiretest.Stateless(hs.URL, formCaps)
	args := map[string]any{"greeting": "hello", "go": true}
	callWith := func(responses map[string]any, state any) *wiretest.Response {
		params := map[string]any{"name": "greet", "arguments": args}
		if responses != nil {
			params["inputResponses"] = responses
		}
		if state != nil {
			params["requestState"] = state
		}
		return p.Call(t, "tools/call", params)
	}

	// Round 1: the two independent questions, batched; confirm waits for name.
	r1 := callWith(nil, nil)
	if r1.Result["resultType"] != "input_required" {
		t.Fatalf("round 1: %s", r1.Raw)
	}
	asked := r1.Result["inputRequests"].(map[string]any)
	if got := keys(asked); !reflect.DeepEqual(got, []string{"mood", "name"}) {
		t.Fatalf("round 1 asks %v, want [mood name]", got)
	}
	if m := asked["name"].(map[string]any); m["method"] != "elicitation/create" {
		t.Errorf("name: %v", m)
	}
	state1 := r1.Result["requestState"]

	// Round 2: answer name only, plus an extra key: mood is asked again,
	// confirm (now unblocked) is asked, the extra key is ignored.
	r2 := callWith(map[string]any{"name": accept(map[string]any{"name": "Ada"}), "bogus": accept(map[string]any{})}, state1)
	if got := keys(r2.Result["inputRequests"].(map[string]any)); !reflect.DeepEqual(got, []string{"confirm", "mood"}) {
		t.Fatalf("round 2 asks %v, want [confirm mood]: %s", got, r2.Raw)
	}
	msg := r2.Result["inputRequests"].(map[string]any)["confirm"].(map[string]any)["params"].(map[string]any)["message"]
	if msg != `Say "hello" to Ada?` {
		t.Errorf("chained question = %q", msg)
	}

	// Round 3: answer both: the body runs, once.
	r3 := callWith(map[string]any{"mood": map[string]any{"action": "decline"}, "confirm": accept(map[string]any{"ok": true})}, r2.Result["requestState"])
	got, isErr := text(t, r3)
	if isErr || got != "hello, Ada (decline: )" {
		t.Fatalf("round 3: %q isError=%v", got, isErr)
	}
	if r3.Result["resultType"] != "complete" {
		t.Errorf("round 3 resultType = %v", r3.Result["resultType"])
	}
	if n := cnt.body.Load(); n != 1 {
		t.Errorf("tool body ran %d times, want 1", n)
	}
	// name feeds both the tool and confirm, yet runs once per round.
	if n := cnt.name.Load(); n != 3 {
		t.Errorf("resolver name ran %d times in 3 rounds, want 3", n)
	}

	// The same state again with other arguments: refused before anything runs.
	before := cnt.name.Load()
	args["greeting"] = "bye"
	r4 := callWith(map[string]any{"mood": map[string]any{"action": "decline"}}, r2.Result["requestState"])
	if r4.Error == nil || r4.Error.Code != -32602 || r4.Error.Message != "Invalid or expired requestState" {
		t.Errorf("replay for other arguments: %s", r4.Raw)
	}
	if cnt.name.Load() != before {
		t.Error("a resolver ran for a call whose state was refused")
	}
	args["greeting"] = "hello"

	// Tampered state.
	s := state1.(string)
	tampered := s[:len(s)-2] + map[bool]string{true: "AA", false: "BB"}[!strings.HasSuffix(s, "AA")]
	if r := callWith(map[string]any{"name": accept(map[string]any{"name": "Eve"})}, tampered); r.Error == nil || r.Error.Code != -32602 {
		t.Errorf("tampered state: %s", r.Raw)
	}

	// Answers without state are discarded: the questions are asked again.
	r5 := callWith(map[string]any{"name": accept(map[string]any{"name": "Eve"}), "mood": accept(map[string]any{"mood": "ok"})}, nil)
	if got := keys(r5.Result["inputRequests"].(map[string]any)); !reflect.DeepEqual(got, []string{"mood", "name"}) {
		t.Errorf("answers without state: asks %v", got)
	}
}

func TestBadAnswers(t *testing.T) {
	var cnt counters
	hs := httptest.NewServer(endpoint.NewHandler(greetServer(t, &cnt), nil))
	defer hs.Close()
	p := wiretest.Stateless(hs.URL, formCaps)
	args := map[string]any{"greeting": "hi"}
	r1 := p.Call(t, "tools/call", map[string]any{"name": "greet", "arguments": args})
	state := r1.Result["requestState"]
	for _, c := range []struct {
		name   string
		answer any
		want   string
	}{
		{"wrong kind", map[string]any{"roots": []any{}}, `the answer to resolver "name"'s question is a roots result, but the question was an elicitation`},
		{"accept without content", map[string]any{"action": "accept"}, "accepts it without content"},
		{"failing the schema", accept(map[string]any{"name": 42}), `does not match the form's fields`},
		{"unknown action", map[string]any{"action": "maybe"}, `has action "maybe"`},
		{"declined where the value is required", map[string]any{"action": "decline"}, `resolver "confirm", input Name: the user answered "decline" (declined) to the question of resolver "name"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := p.Call(t, "tools/call", map[string]any{"name": "greet", "arguments": args, "requestState": state,
				"inputResponses": map[string]any{"name": c.answer, "mood": map[string]any{"action": "cancel"}}})
			got, isErr := text(t, r)
			if !isErr || !strings.Contains(got, c.want) {
				t.Errorf("got %q (isError %v), want a tool error containing %q", got, isErr, c.want)
			}
			if strings.Contains(got, "validating") || strings.Contains(got, "/properties") {
				t.Errorf("validator internals leaked: %q", got)
			}
		})
	}
}

func TestMissingCapability(t *testing.T) {
	var cnt counters
	hs := httptest.NewServer(endpoint.NewHandler(greetServer(t, &cnt), nil))
	defer hs.Close()
	for _, era := range []func(string, map[string]any) *wiretest.Peer{wiretest.Stateless, wiretest.Legacy} {
		p := era(hs.URL, nil)
		r := p.Call(t, "tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"greeting": "hi"}})
		p.Close()
		if r.Error == nil || r.Error.Code != -32021 {
			t.Fatalf("%s: %s", p.Version, r.Raw)
		}
		var data map[string]any
		json.Unmarshal(r.Error.Data, &data)
		want := map[string]any{"requiredCapabilities": map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}}
		if !reflect.DeepEqual(data, want) {
			t.Errorf("%s: data = %v, want %v", p.Version, data, want)
		}
	}
	if cnt.body.Load() != 0 {
		t.Error("the body ran without its answers")
	}
}

// answerer answers elicitations the way a user would: by message.
func answerer(decline string) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		m := req.Params.Message
		switch {
		case decline != "" && strings.Contains(m, decline):
			return &mcp.ElicitResult{Action: "decline"}, nil
		case strings.Contains(m, "name"):
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace"}}, nil
		case strings.Contains(m, "feel"):
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"mood": "fine"}}, nil
		default:
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
		}
	}
}

// TestSDKClientBothEras: the Go SDK client answers from its elicitation
// handler: as mid-call requests on a legacy session (a chain in one
// call), and as input_required rounds under 2026-07-28.
func TestSDKClientBothEras(t *testing.T) {
	for _, era := range []string{"2026-07-28", "2025-11-25"} {
		for _, decline := range []string{"", "name"} {
			t.Run(era+"/decline="+decline, func(t *testing.T) {
				var cnt counters
				hs := httptest.NewServer(endpoint.NewHandler(greetServer(t, &cnt), nil))
				defer hs.Close()
				c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: answerer(decline)})
				var opts *mcp.ClientSessionOptions
				if era != "2026-07-28" {
					opts = &mcp.ClientSessionOptions{ProtocolVersion: era}
				}
				cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL}, opts)
				if err != nil {
					t.Fatal(err)
				}
				defer cs.Close()
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"greeting": "hi", "go": false}})
				if err != nil {
					t.Fatal(err)
				}
				got := res.Content[0].(*mcp.TextContent).Text
				if decline == "" {
					if res.IsError || got != "hi, Grace (accept: fine)" {
						t.Errorf("got %q isError=%v", got, res.IsError)
					}
				} else if !res.IsError || !strings.Contains(got, `"decline"`) {
					t.Errorf("decline: got %q isError=%v", got, res.IsError)
				}
				// Each question was asked once.
				if era == "2025-11-25" && (cnt.name.Load() != 1 || cnt.mood.Load() != 1) {
					t.Errorf("legacy: name ran %d, mood %d times, want once each", cnt.name.Load(), cnt.mood.Load())
				}
			})
		}
	}
}

func TestRegistrationErrors(t *testing.T) {
	noop := func(context.Context, *inject.Request, struct {
		X int `json:"x" inject:"a"`
	}) (*mcp.CallToolResult, error) {
		return nil, nil
	}
	intResolver := func(name string) *inject.Resolver {
		return inject.NewResolver(name, func(context.Context, struct{}) (int, error) { return 1, nil })
	}
	cycleA := inject.NewResolver("a", func(context.Context, struct {
		B int `inject:"b"`
	}) (int, error) {
		return 0, nil
	})
	cycleB := inject.NewResolver("b", func(context.Context, struct {
		A int `inject:"a"`
	}) (int, error) {
		return 0, nil
	})
	self := inject.NewResolver("a", func(context.Context, struct {
		A int `inject:"a"`
	}) (int, error) {
		return 0, nil
	})
	noSource := inject.NewResolver("a", func(context.Context, struct{ Path string }) (int, error) { return 0, nil })
	badArg := inject.NewResolver("a", func(context.Context, struct {
		P string `arg:"nope"`
	}) (int, error) {
		return 0, nil
	})
	wrongType := inject.NewResolver("a", func(context.Context, struct{}) (string, error) { return "", nil })
	cases := []struct {
		name      string
		resolvers []*inject.Resolver
		want      string
	}{
		{"cycle", []*inject.Resolver{cycleA, cycleB}, `resolver "a" has a cyclic dependency: a -> b -> a`},
		{"self", []*inject.Resolver{self}, `resolver "a" has a cyclic dependency: a -> a`},
		{"no source", []*inject.Resolver{noSource}, `resolver "a", input Path: no source`},
		{"unknown argument", []*inject.Resolver{badArg}, `resolver "a", input P: takes argument "nope", which tool "t" does not have`},
		{"resolver not given", nil, `parameter X: takes resolver "a", which was not given`},
		{"wrong type", []*inject.Resolver{wrongType}, `parameter X: is a int, but resolver "a" gives a string`},
		{"unused", []*inject.Resolver{intResolver("a"), intResolver("z")}, `resolver "z" was given but nothing in tool "t" uses it`},
		{"same name", []*inject.Resolver{intResolver("a"), intResolver("a")}, `two different resolvers are named "a"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				p := recover()
				err, _ := p.(error)
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("panic %v, want one containing %q", p, c.want)
				}
			}()
			inject.Tool(inject.NewInjector(nil), &mcp.Tool{Name: "t"}, noop, c.resolvers...)
		})
	}
}

func TestResolvedParametersLeaveTheSchema(t *testing.T) {
	var cnt counters
	s := greetServer(t, &cnt)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(list.Tools[0].InputSchema)
	var schema map[string]any
	json.Unmarshal(b, &schema)
	props := schema["properties"].(map[string]any)
	if _, ok := props["go"]; ok || len(props) != 1 || props["greeting"] == nil {
		t.Errorf("inputSchema properties = %v, want only greeting", props)
	}
}

// TestRewordedQuestionIsAskedAgain: a replica that renders a question
// differently (a redeploy that reworded it) asks it again instead of
// using the answer recorded for the old wording.
func TestRewordedQuestionIsAskedAgain(t *testing.T) {
	secret, err := requeststate.ParseKeys("k1:" + base64.StdEncoding.EncodeToString(make([]byte, 32)))
	if err != nil {
		t.Fatal(err)
	}
	ring, err := requeststate.NewRing(secret, nil)
	if err != nil {
		t.Fatal(err)
	}
	server := func(question string) *httptest.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "r", Version: "1"}, nil)
		inj := inject.NewInjector(&inject.Options{Ring: ring, Audience: "replicas"})
		ask := inject.NewResolver("name", func(ctx context.Context, _ struct{}) (inject.Elicited[NameForm], error) {
			return inject.Elicit[NameForm](ctx, question)
		})
		other := inject.NewResolver("mood", func(ctx context.Context, _ struct{}) (inject.Elicited[MoodForm], error) {
			return inject.Elicit[MoodForm](ctx, "How do you feel?")
		})
		inject.AddTool(s, inj, &mcp.Tool{Name: "hello"}, func(_ context.Context, _ *inject.Request, in struct {
			Name NameForm                  `json:"-" inject:"name"`
			Mood inject.Elicited[MoodForm] `json:"-" inject:"mood"`
		}) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + in.Name.Name}}}, nil
		}, ask, other)
		return httptest.NewServer(endpoint.NewHandler(s, nil))
	}
	a, b := server("What is your name?"), server("Your name, please?")
	defer a.Close()
	defer b.Close()
	call := func(url string, responses map[string]any, state any) *wiretest.Response {
		params := map[string]any{"name": "hello", "arguments": map[string]any{}}
		if state != nil {
			params["requestState"], params["inputResponses"] = state, responses
		}
		return wiretest.Stateless(url, formCaps).Call(t, "tools/call", params)
	}
	r1 := call(a.URL, nil, nil)
	// Replica a records name's answer; mood stays pending.
	r2 := call(a.URL, map[string]any{"name": accept(map[string]any{"name": "Ada"})}, r1.Result["requestState"])
	if got := keys(r2.Result["inputRequests"].(map[string]any)); !reflect.DeepEqual(got, []string{"mood"}) {
		t.Fatalf("replica a, round 2 asks %v", got)
	}
	// Replica b words the name question differently: it asks it again.
	r3 := call(b.URL, map[string]any{"mood": accept(map[string]any{"mood": "ok"})}, r2.Result["requestState"])
	if got := keys(r3.Result["inputRequests"].(map[string]any)); !reflect.DeepEqual(got, []string{"name"}) {
		t.Fatalf("replica b asks %v, want the reworded name question only: %s", got, r3.Raw)
	}
	r4 := call(b.URL, map[string]any{"name": accept(map[string]any{"name": "Grace"})}, r3.Result["requestState"])
	if got, _ := text(t, r4); got != "hello Grace" {
		t.Errorf("got %q", got)
	}
}

// TestElicitFormAndCapabilities: a resolver that asks with a schema of its
// own (a titled enum), and asks only when the client can answer.
func TestElicitFormAndCapabilities(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "f", Version: "1"}, nil)
	schema := &jsonschema.Schema{Type: "object", Required: []string{"size"}, Properties: map[string]*jsonschema.Schema{
		"size": {Type: "string", OneOf: []*jsonschema.Schema{{Const: jsonschema.Ptr[any]("s"), Title: "Small"}, {Const: jsonschema.Ptr[any]("l"), Title: "Large"}}},
	}}
	size := inject.NewResolver("size", func(ctx context.Context, _ struct{}) (string, error) {
		if inject.ClientCapabilities(ctx).Elicitation == nil {
			return "s", nil // a client that cannot answer gets the default
		}
		ans, err := inject.ElicitForm(ctx, "Which size?", schema)
		if err != nil {
			return "", err
		}
		v, _ := ans.Data["size"].(string)
		return v, nil
	})
	inject.AddTool(s, inject.NewInjector(nil), &mcp.Tool{Name: "order"}, func(_ context.Context, _ *inject.Request, in struct {
		Size string `json:"-" inject:"size"`
	}) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "size " + in.Size}}}, nil
	}, size)
	hs := httptest.NewServer(endpoint.NewHandler(s, nil))
	defer hs.Close()

	if got, _ := text(t, wiretest.Stateless(hs.URL, nil).Call(t, "tools/call", map[string]any{"name": "order", "arguments": map[string]any{}})); got != "size s" {
		t.Errorf("client without elicitation: %q", got)
	}
	p := wiretest.Stateless(hs.URL, formCaps)
	r1 := p.Call(t, "tools/call", map[string]any{"name": "order", "arguments": map[string]any{}})
	q := r1.Result["inputRequests"].(map[string]any)["size"].(map[string]any)["params"].(map[string]any)
	if one := q["requestedSchema"].(map[string]any)["properties"].(map[string]any)["size"].(map[string]any)["oneOf"]; len(one.([]any)) != 2 {
		t.Fatalf("schema not sent as given: %v", q)
	}
	r2 := p.Call(t, "tools/call", map[string]any{"name": "order", "arguments": map[string]any{}, "requestState": r1.Result["requestState"],
		"inputResponses": map[string]any{"size": accept(map[string]any{"size": "x"})}})
	if got, isErr := text(t, r2); !isErr || !strings.Contains(got, "does not match the form") {
		t.Errorf("answer outside the enum: %q", got)
	}
	r3 := p.Call(t, "tools/call", map[string]any{"name": "order", "arguments": map[string]any{}, "requestState": r1.Result["requestState"],
		"inputResponses": map[string]any{"size": accept(map[string]any{"size": "l"})}})
	if got, _ := text(t, r3); got != "size l" {
		t.Errorf("got %q", got)
	}
}
