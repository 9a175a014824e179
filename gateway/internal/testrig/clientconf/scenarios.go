package clientconf

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// play connects to the gateway at url in the scenario's era and does what
// the scenario expects of a client, as the suite's reference client
// (examples/clients/typescript/everything-client.ts) does; with a browser,
// it connects the upstream again when the gateway asks.
func play(ctx context.Context, s Scenario, url string, b *browser) (err error) {
	do := scenarioClient(s.Name)
	if do == nil {
		return fmt.Errorf("no client for scenario %q", s.Name)
	}
	if b != nil {
		do = signedIn(do, b)
	}
	p, err := connect(ctx, url, s.Protocol)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, p.close()) }()
	return do(ctx, p)
}

// client is one scenario's client.
type client func(context.Context, peer) error

// scenarioClient is the client of the named scenario, nil when there is
// none. It is the one place scenarios are told apart.
func scenarioClient(name string) client {
	switch name {
	case "initialize", "tools_call":
		return callFirstTool
	case "json-schema-ref-no-deref":
		return listTools
	case "request-metadata":
		return discoverThenList
	case "sep-2322-client-request-state":
		return answerInputRequired
	case "http-standard-headers":
		return everyKind
	case "http-custom-headers":
		return callTools(map[string]map[string]any{
			"test_custom_headers": {"region": "us-west1", "priority": 42, "verbose": true, "query": "SELECT 1",
				"non_ascii_val": "Hello, 世界", "whitespace_val": " padded ", "internal_space_val": "two words"},
			"test_custom_headers_null": {"region": "us-east1", "priority": 1, "verbose": nil, "query": "SELECT 1"},
		})
	case "http-invalid-tool-headers":
		return callEveryTool
	case "elicitation-sep1034-client-defaults":
		return callTools(map[string]map[string]any{"test_client_elicitation_defaults": {}})
	case "sse-retry":
		return callTools(map[string]map[string]any{"test_reconnection": {}})
	case "json-schema-2020-12-preservation":
		return echoSchema
	}
	if strings.HasPrefix(name, "auth/") {
		// What the reference client does once signed in; the gateway's
		// sign-in to an OAuth-protected upstream is its own to do.
		return callTools(map[string]map[string]any{"test-tool": {}})
	}
	return nil
}

// tools lists the gateway's tools.
func tools(ctx context.Context, p peer) ([]map[string]any, error) {
	res, err := p.request(ctx, "tools/list", nil)
	if err != nil {
		return nil, err
	}
	return items(res, "tools"), nil
}

// items is the list under key in a result, its members as maps.
func items(res map[string]any, key string) []map[string]any {
	list, _ := res[key].([]any)
	var out []map[string]any
	for _, v := range list {
		if m, ok := v.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func listTools(ctx context.Context, p peer) error {
	_, err := tools(ctx, p)
	return err
}

// callFirstTool lists the tools and calls the first with {a: 2, b: 3}.
func callFirstTool(ctx context.Context, p peer) error {
	list, err := tools(ctx, p)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		return errors.New("the gateway lists no tools")
	}
	_, err = p.request(ctx, "tools/call", map[string]any{"name": list[0]["name"], "arguments": map[string]any{"a": 2, "b": 3}})
	return err
}

// callTools lists the tools and calls each named one with its arguments,
// failing if one is not listed.
func callTools(calls map[string]map[string]any) client {
	return func(ctx context.Context, p peer) error {
		list, err := tools(ctx, p)
		if err != nil {
			return err
		}
		for name, args := range calls {
			if !listed(list, name) {
				return fmt.Errorf("the gateway does not list %s", name)
			}
			if _, err := p.request(ctx, "tools/call", map[string]any{"name": name, "arguments": args}); err != nil {
				return err
			}
		}
		return nil
	}
}

func listed(list []map[string]any, name string) bool {
	for _, t := range list {
		if t["name"] == name {
			return true
		}
	}
	return false
}

// callEveryTool calls every listed tool, each string property filled in:
// a tool the gateway should have left out is then called.
func callEveryTool(ctx context.Context, p peer) error {
	list, err := tools(ctx, p)
	if err != nil {
		return err
	}
	for _, t := range list {
		args := map[string]any{}
		schema, _ := t["inputSchema"].(map[string]any)
		props, _ := schema["properties"].(map[string]any)
		for name, v := range props {
			if prop, _ := v.(map[string]any); prop["type"] == "string" {
				args[name] = "x"
			}
		}
		if _, err := p.request(ctx, "tools/call", map[string]any{"name": t["name"], "arguments": args}); err != nil {
			return err
		}
	}
	return nil
}

// discoverThenList asks server/discover, then lists the tools (a session
// has no server/discover: it lists only).
func discoverThenList(ctx context.Context, p peer) error {
	if _, ok := p.(*stateless); ok {
		if _, err := p.request(ctx, "server/discover", nil); err != nil {
			return err
		}
	}
	return listTools(ctx, p)
}

// everyKind lists, and calls, reads or gets the first of, tools,
// resources and prompts.
func everyKind(ctx context.Context, p peer) error {
	for _, k := range []struct{ list, key, use, by string }{
		{"tools/list", "tools", "tools/call", "name"},
		{"resources/list", "resources", "resources/read", "uri"},
		{"prompts/list", "prompts", "prompts/get", "name"},
	} {
		res, err := p.request(ctx, k.list, nil)
		if err != nil {
			return err
		}
		all := items(res, k.key)
		if len(all) == 0 {
			return fmt.Errorf("%s: none", k.list)
		}
		params := map[string]any{k.by: all[0][k.by]}
		if k.use == "tools/call" {
			params["arguments"] = map[string]any{}
		}
		if _, err := p.request(ctx, k.use, params); err != nil {
			return err
		}
	}
	return nil
}

// answerInputRequired is the multi-round (SEP-2322) client: it answers an
// input_required result's elicitations (accepting, confirmed) and retries
// with the round's requestState, calling an unrelated tool in between.
func answerInputRequired(ctx context.Context, p peer) error {
	if _, err := tools(ctx, p); err != nil {
		return err
	}
	call := func(params map[string]any) (map[string]any, error) { return p.request(ctx, "tools/call", params) }
	answers := func(res map[string]any) map[string]any {
		out := map[string]any{}
		reqs, _ := res["inputRequests"].(map[string]any)
		for key, v := range reqs {
			if r, _ := v.(map[string]any); r["method"] == "elicitation/create" {
				out[key] = map[string]any{"action": "accept", "content": map[string]any{"confirmed": true}}
			}
		}
		return out
	}
	r1, err := call(map[string]any{"name": "test_mrtr_echo_state", "arguments": map[string]any{}})
	if err != nil {
		return err
	}
	if r1["resultType"] == "input_required" {
		if _, err := call(map[string]any{"name": "test_mrtr_unrelated", "arguments": map[string]any{}}); err != nil {
			return err
		}
		retry := map[string]any{"name": "test_mrtr_echo_state", "arguments": map[string]any{}, "inputResponses": answers(r1)}
		if st, ok := r1["requestState"]; ok {
			retry["requestState"] = st
		}
		if _, err := call(retry); err != nil {
			return err
		}
	}
	r2, err := call(map[string]any{"name": "test_mrtr_no_state", "arguments": map[string]any{}})
	if err != nil {
		return err
	}
	if r2["resultType"] == "input_required" {
		retry := map[string]any{"name": "test_mrtr_no_state", "arguments": map[string]any{}, "inputResponses": answers(r2)}
		if st, ok := r2["requestState"]; ok {
			retry["requestState"] = st // the gateway's own, if it added one
		}
		if _, err := call(retry); err != nil {
			return err
		}
	}
	_, err = call(map[string]any{"name": "test_mrtr_no_result_type", "arguments": map[string]any{}})
	return err
}

// echoSchema sends the focal tool's input schema, as listed, to the echo
// tool (json-schema-2020-12-preservation).
func echoSchema(ctx context.Context, p peer) error {
	list, err := tools(ctx, p)
	if err != nil {
		return err
	}
	for _, t := range list {
		if t["name"] == "json_schema_2020_12_tool" {
			_, err := p.request(ctx, "tools/call", map[string]any{"name": "json_schema_echo", "arguments": map[string]any{"schema": t["inputSchema"]}})
			return err
		}
	}
	return errors.New("the gateway does not list json_schema_2020_12_tool")
}
