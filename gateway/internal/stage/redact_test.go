package stage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/redact"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
	"github.com/preflightmcp/preflight/hints"
)

// TestRedactKeepsTheUpstreamsBytes checks the redact stage on the result
// the forwarder returns: a sensitive one comes back redacted with every
// member it does not rewrite kept as the upstream wrote it, a question and
// a result below the level come back as they were, a result withheld says
// so, and Call.Redaction counts kinds without values.
func TestRedactKeepsTheUpstreamsBytes(t *testing.T) {
	r, err := redact.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	const body = `{"content":[{"type":"text","text":"mail jane.doe@example.com"}],"structuredContent":{"to":"jane.doe@example.com"},"resultType":"complete","x-vendor":{"n":1e400},"_meta":{"k":true}}`
	h := chain(nil, &stage.Redact{Redactor: r})
	run := func(s hints.Sensitivity, res json.RawMessage) (json.RawMessage, *call.Call) {
		c := &call.Call{Method: call.ToolsCall, Name: "t", Resolution: &call.Resolution{}}
		c.Resolution.Hints.ResultSensitivity = s
		*h = *chain(call.HandlerFunc(func(context.Context, *call.Call) (json.RawMessage, error) { return res, nil }), &stage.Redact{Redactor: r})
		out, err := h.Serve(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		return out, c
	}

	in := json.RawMessage(body)
	got, c := run(hints.SensitivityConfidential, in)
	if bytes.Equal(got, in) {
		t.Fatalf("a confidential result came back as it was")
	}
	for _, want := range []string{`"text":"mail [REDACTED:email]"`, `"structuredContent":{"to":"[REDACTED:email]"}`, `"resultType":"complete"`, `"x-vendor":{"n":1e400}`, `"_meta":{"k":true}`} {
		if !strings.Contains(string(got), want) {
			t.Errorf("redacted body lacks %s: %s", want, got)
		}
	}
	if strings.Contains(string(got), "jane.doe") || c.Redaction == nil || c.Redaction.Kinds["email"] != 1 || c.Redaction.Withheld {
		t.Errorf("body %s, redaction %+v", got, c.Redaction)
	}

	if out, c := run(hints.SensitivityInternal, in); !bytes.Equal(out, in) || c.Redaction != nil {
		t.Errorf("an internal result was changed: %+v", c.Redaction)
	}
	q := json.RawMessage(`{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{"message":"jane.doe@example.com?"}}}}`)
	if out, _ := run(hints.SensitivityConfidential, q); !bytes.Equal(out, q) {
		t.Error("a question was changed")
	}
	// A result that names itself input_required first and complete last
	// is complete to the SDK (the last member wins): it is redacted.
	for _, twice := range []string{
		`{"resultType":"input_required","content":[{"type":"text","text":"mail jane.doe@example.com"}],"resultType":"complete"}`,
		`{"resultType":"input_required","content":[{"type":"text","text":"mail jane.doe@example.com"}],"result\u0054ype":"complete"}`,
	} {
		if out, _ := run(hints.SensitivityConfidential, json.RawMessage(twice)); strings.Contains(string(out), "jane.doe") {
			t.Errorf("a result with two resultTypes passed unredacted: %s", out)
		}
	}
	if got, c := run(hints.SensitivityRestricted, in); !strings.Contains(string(got), `"isError":true`) || strings.Contains(string(got), "structuredContent") ||
		!strings.Contains(string(got), "withheld") || c.Redaction == nil || !c.Redaction.Withheld {
		t.Errorf("restricted: %s, %+v", got, c.Redaction)
	}
}
