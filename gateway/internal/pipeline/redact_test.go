package pipeline_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/pipeline"
	"github.com/preflightmcp/preflight/gateway/internal/redact"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
	"github.com/preflightmcp/preflight/hints"
)

// rawResult is a result forwarded as bytes, as bridge.Raw is.
type rawResult struct {
	mcp.CallToolResult
	body json.RawMessage
}

func (r *rawResult) Body() json.RawMessage { return r.body }

// TestRedactKeepsTheUpstreamsBytes checks the redact stage on a result
// forwarded as bytes: a sensitive one comes back redacted with every
// member it does not rewrite kept as the upstream wrote it, a question and
// a result below the level come back as they were, a result withheld says
// so, and Call.Redaction counts kinds without values.
func TestRedactKeepsTheUpstreamsBytes(t *testing.T) {
	r, err := redact.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	const body = `{"content":[{"type":"text","text":"mail jane.doe@example.com"}],"structuredContent":{"to":"jane.doe@example.com"},"resultType":"complete","x-vendor":{"n":1e400},"_meta":{"k":true}}`
	var got json.RawMessage
	stage := pipeline.Redact(r, &pipeline.RedactOptions{Raw: func(b json.RawMessage) mcp.Result { got = b; return &rawResult{body: b} }})
	run := func(s hints.Sensitivity, res mcp.Result) (mcp.Result, *pipeline.Call) {
		got = nil
		c := &pipeline.Call{Method: upstream.MethodCallTool, Name: "t", Resolution: &pipeline.Resolution{}}
		c.Resolution.Hints.ResultSensitivity = s
		h := stage.Wrap(pipeline.HandlerFunc(func(context.Context, *pipeline.Call) (mcp.Result, error) { return res, nil }))
		out, err := h.Serve(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		return out, c
	}

	in := &rawResult{body: json.RawMessage(body)}
	out, c := run(hints.SensitivityConfidential, in)
	if out == in || got == nil {
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

	if out, c := run(hints.SensitivityInternal, in); out != in || c.Redaction != nil {
		t.Errorf("an internal result was changed: %+v", c.Redaction)
	}
	q := &rawResult{body: json.RawMessage(`{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{"message":"jane.doe@example.com?"}}}}`)}
	if out, _ := run(hints.SensitivityConfidential, q); out != q {
		t.Error("a question was changed")
	}
	if _, c := run(hints.SensitivityRestricted, in); !strings.Contains(string(got), `"isError":true`) || strings.Contains(string(got), "structuredContent") ||
		!strings.Contains(string(got), "withheld") || c.Redaction == nil || !c.Redaction.Withheld {
		t.Errorf("restricted: %s, %+v", got, c.Redaction)
	}
}
