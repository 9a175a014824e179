package call

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/rawjson"
)

// ToolError is a tool error the gateway makes itself: the call was refused
// or ended by the gateway, not by the upstream.
func ToolError(text string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Content []mcp.Content `json:"content"`
		IsError bool          `json:"isError"`
	}{[]mcp.Content{&mcp.TextContent{Text: text}}, true})
	return b
}

// InputRequired is an input_required result: the questions by key, and the
// state the client echoes with its answers.
func InputRequired(questions map[string]json.RawMessage, state string) json.RawMessage {
	members := make([]rawjson.Member, 0, len(questions))
	for _, k := range sortedKeys(questions) {
		members = append(members, rawjson.Member{Key: k, Value: questions[k]})
	}
	tok, _ := json.Marshal(state)
	return rawjson.Object([]rawjson.Member{
		{Key: "resultType", Value: json.RawMessage(`"input_required"`)},
		{Key: "inputRequests", Value: rawjson.Object(members)},
		{Key: "requestState", Value: tok},
	})
}

// Questions encodes the questions of an input_required result as the SDK
// does: each {"method", "params"}.
func Questions(m mcp.InputRequestMap) (map[string]json.RawMessage, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	ms, err := rawjson.Members(b)
	if err != nil {
		return nil, err
	}
	out := make(map[string]json.RawMessage, len(ms))
	for _, x := range ms {
		out[x.Key] = x.Value
	}
	return out, nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// ForClient returns result in the client's era: a 2026-07-28 client's has
// a resultType ("complete" unless the upstream said otherwise), an older
// client's has none. A result that is not an object is returned as it is.
func ForClient(client *Client, result json.RawMessage) json.RawMessage {
	if client != nil && client.Modern() {
		if _, ok, _ := rawjson.Get(result, "resultType"); !ok {
			if out, err := rawjson.Set(result, "resultType", json.RawMessage(`"complete"`)); err == nil {
				return out
			}
		}
		return result
	}
	if _, ok, _ := rawjson.Get(result, "resultType"); ok {
		if out, err := rawjson.Delete(result, "resultType"); err == nil {
			return out
		}
	}
	return result
}

// IsInputRequired reports an input_required result: one whose only
// resultType member says so. With two, peers read it differently (the
// SDK takes the last): it is not a question, so that what it holds is
// redacted and tracked as a result.
func IsInputRequired(result json.RawMessage) bool {
	if rt, _, _ := rawjson.GetString(result, "resultType"); rt != "input_required" {
		return false
	}
	ms, err := rawjson.Members(result)
	if err != nil {
		return false
	}
	n := 0
	for _, m := range ms {
		if m.Key == "resultType" {
			n++
		}
	}
	return n == 1
}

// IsToolError reports a result with isError true.
func IsToolError(result json.RawMessage) bool {
	v, _, _ := rawjson.Get(result, "isError")
	return string(v) == "true"
}

// Raw is a result the SDK server sends as it is, byte for byte. Keys the
// SDK adds to its _meta on the way out (the server's identity under
// 2026-07-28) are merged into the body's _meta, the body's own values
// winning.
type Raw struct {
	mcp.ResultBase
	body json.RawMessage
}

// NewRaw returns a result whose JSON is body, a JSON object.
func NewRaw(body json.RawMessage) *Raw { return &Raw{body: body} }

// Body returns the result's JSON without the SDK's additions.
func (r *Raw) Body() json.RawMessage { return r.body }

// MarshalJSON implements json.Marshaler.
func (r *Raw) MarshalJSON() ([]byte, error) {
	if len(r.Meta) == 0 {
		return r.body, nil
	}
	meta, ok, err := rawjson.Get(r.body, "_meta")
	if err != nil {
		return r.body, nil
	}
	if !ok {
		b, err := json.Marshal(r.Meta)
		if err != nil {
			return nil, err
		}
		return rawjson.Set(r.body, "_meta", b)
	}
	for k, v := range r.Meta {
		if _, has, _ := rawjson.Get(meta, k); has {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		if meta, err = rawjson.Set(meta, k, b); err != nil {
			return r.body, nil
		}
	}
	return rawjson.Set(r.body, "_meta", meta)
}
