// Package interop drives third-party MCP clients against preflight servers in
// tests.
//
// [RunTS] runs the real TypeScript MCP SDK v2 client
// (@modelcontextprotocol/client, pinned with zod in testdata/ts/package.json
// and package-lock.json) through a [Plan] and returns what the client saw as
// a [Report]. It speaks streamable HTTP in both protocol eras (2026-07-28,
// stateless, and 2025-11-25, with sessions) and stdio. The npm dependencies
// are installed with `npm ci` on first use; Node.js (>= 20) and, on first
// use, the npm registry must be reachable. The harness never skips: a missing
// tool is a test failure.
//
// # Questions from the server
//
// [Plan.Elicit] and [Plan.Sample] register scripted elicitation/create and
// sampling/createMessage handlers on the client (declaring the elicitation
// {form: {}} and sampling capabilities); every question they receive is in
// [Report.Asked]. The SDK routes both kinds of question to these handlers:
//
//   - on a legacy connection (2025-11-25) the server sends a real
//     server-to-client JSON-RPC request in the middle of the call (over HTTP on
//     the POST's SSE stream); the handler sees the server's request id, and
//     with [Plan.Wire] the request shows in the step's Wire;
//   - on 2026-07-28 the server answers tools/call with resultType
//     "input_required" instead, and the SDK's auto-fulfilment driver
//     (inputRequired.autoFulfill, on by default, at most
//     inputRequired.maxRounds rounds, 10 by default, see [Plan.MaxRounds])
//     hands each inputRequests entry to the same handler, with the entry's
//     key as the request id, then retries the call with inputResponses and
//     the requestState echoed, on a new id. callTool returns only the final
//     result; the rounds show in the step's Wire (one response per round).
//     The client drops any server-to-client request on a 2026-07-28
//     connection.
//
// # Manual mode
//
// [Plan.Manual] runs the client as a manual MRTR client: the SDK's
// inputRequired.autoFulfill is false and every call, request and retry step
// passes the request option allowInputRequired: true. An input_required
// response is then the step's result as the SDK returns it:
// {"resultType": "input_required", "inputRequests": {...}, "requestState":
// "..."}: unlike a complete result, resultType is kept; inputRequests (an
// object) and requestState (a string) are passed through unvalidated, _meta
// only if it parses, and every other member of the wire result is dropped
// (the Go SDK's "content": null, for one). Manual mode has no effect on a
// legacy connection, which has no input_required: a question there is a
// server-to-client request, answered by the Elicit handler, or by the SDK
// with a method-not-found error if there is none.
// With autoFulfill false but without allowInputRequired ([Plan.AutoFulfill]
// false, no Manual) the SDK rejects the call instead: an SdkError with
// SDKCode "UNSUPPORTED_RESULT_TYPE" and data {"resultType":
// "input_required", "method": ...}. [Step.AllowInputRequired] makes one step
// manual while auto-fulfilment stays on. A [Retry] step then sends the
// answers: the same request again with inputResponses and the requestState
// of the earlier step's result, echoed byte for byte.
//
// The package is meant for tests only; it imports package testing.
package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/internal/npmdeps"
)

// Eras accepted by [Plan.Era].
const (
	// EraModern pins the 2026-07-28 protocol (server/discover, no sessions).
	EraModern = "2026-07-28"
	// EraLegacy is the initialize handshake at 2025-11-25.
	EraLegacy = "legacy"
	// EraAuto probes with server/discover and falls back to initialize.
	EraAuto = "auto"
)

// Plan is what the TypeScript client is told to do.
type Plan struct {
	// Transport says how to reach the server.
	Transport Transport `json:"transport"`
	// Era is EraModern (or any other date to pin), EraLegacy (also spelled
	// "2025-11-25") or EraAuto. Empty means EraLegacy.
	Era string `json:"era,omitempty"`
	// Extensions are declared under the client's capabilities.extensions;
	// empty declares none.
	Extensions map[string]any `json:"extensions,omitempty"`
	// Capabilities are further client capabilities (merged with Extensions).
	Capabilities map[string]any `json:"capabilities,omitempty"`
	// TimeoutMS bounds the connect and each step inside the client; a step
	// that times out is reported as an error with SDKCode
	// "REQUEST_TIMEOUT". Zero means 15 s.
	TimeoutMS int `json:"timeoutMs,omitempty"`
	// Wire asks for the JSON-RPC messages received during each step, as
	// they arrived, before the SDK decoded (and stripped) them.
	Wire bool `json:"wire,omitempty"`
	// Elicit, if not nil, registers an elicitation/create handler that
	// answers the Nth question with Elicit[N] (an ElicitResult, such as
	// {"action": "accept", "content": {...}}; see [Accept], [Decline],
	// [Cancel]) and declares capabilities.elicitation = {"form": {}} unless
	// Capabilities has an elicitation entry. A question beyond the list
	// fails the handler, so an empty, non-nil list declares the
	// capability and fails any question. Questions are recorded in
	// [Report.Asked].
	Elicit []map[string]any `json:"elicit"`
	// Sample, if not nil, likewise registers a sampling/createMessage
	// handler answering with scripted CreateMessageResults (such as
	// {"role": "assistant", "model": "m", "content": {"type": "text",
	// "text": "..."}}) and declares capabilities.sampling = {}.
	Sample []map[string]any `json:"sample"`
	// Manual is MRTR manual mode (2026-07-28): inputRequired.autoFulfill
	// false and allowInputRequired on every call, request and retry step,
	// so an input_required result is returned raw (see the package doc).
	Manual bool `json:"manual,omitempty"`
	// AutoFulfill, when set, is the client's inputRequired.autoFulfill
	// (after Manual); nil leaves the SDK default (true).
	AutoFulfill *bool `json:"autoFulfill,omitempty"`
	// MaxRounds is the client's inputRequired.maxRounds; zero leaves the
	// SDK default (10).
	MaxRounds int `json:"maxRounds,omitempty"`
	// Steps run in order on one connection.
	Steps []Step `json:"steps"`
}

// Transport is one of HTTP (a streamable HTTP endpoint URL) or Stdio.
type Transport struct {
	HTTP  string `json:"http,omitempty"`
	Stdio *Stdio `json:"stdio,omitempty"`
}

// Stdio describes a server process the client spawns.
type Stdio struct {
	Command string   `json:"command"`
	Args    []string `json:"args,omitempty"`
	// Env replaces the environment; nil means the SDK's default (HOME,
	// PATH, USER and a few others only).
	Env map[string]string `json:"env,omitempty"`
	Dir string            `json:"cwd,omitempty"`
}

// Step is one client operation. Use [Info], [List], [Call], [Request] and
// [Retry].
type Step struct {
	// Op is "info", "list", "call", "request" or "retry".
	Op        string         `json:"op"`
	Name      string         `json:"name,omitempty"`
	Arguments map[string]any `json:"arguments,omitempty"`
	Method    string         `json:"method,omitempty"`
	Params    any            `json:"params,omitempty"`
	// AllowInputRequired passes allowInputRequired: true on this step
	// (implied by [Plan.Manual]): an input_required result is returned
	// raw instead of being fulfilled.
	AllowInputRequired bool `json:"allowInputRequired,omitempty"`
	// From is the index of the step a retry step resends; nil means the
	// step before it.
	From *int `json:"from,omitempty"`
	// InputResponses are a retry step's inputResponses.
	InputResponses map[string]any `json:"inputResponses,omitempty"`
	// RequestState, if not empty, replaces the requestState a retry step
	// echoes.
	RequestState string `json:"requestState,omitempty"`
}

// Info reports the negotiated protocol version and server capabilities.
func Info() Step { return Step{Op: "info"} }

// List calls client.listTools() (typed: unknown tool fields are stripped).
func List() Step { return Step{Op: "list"} }

// Call calls client.callTool({name, arguments}).
func Call(name string, args map[string]any) Step {
	return Step{Op: "call", Name: name, Arguments: args}
}

// Request sends client.request({method, params}, z.looseObject({})): the
// result keeps every field except resultType, which the SDK always drops.
// params may be nil.
func Request(method string, params any) Step {
	return Step{Op: "request", Method: method, Params: params}
}

// Retry resends the previous step's call or request (a call, request or
// retry step) with inputResponses and the requestState of that step's
// result echoed: the second leg of a manual MRTR round. It goes through
// callTool if the original step was a [Call], else client.request.
func Retry(responses map[string]any) Step {
	return Step{Op: "retry", InputResponses: responses}
}

// RetryFrom is [Retry] of step index from.
func RetryFrom(from int, responses map[string]any) Step {
	return Step{Op: "retry", From: &from, InputResponses: responses}
}

// Accept is an ElicitResult accepting with content.
func Accept(content map[string]any) map[string]any {
	return map[string]any{"action": "accept", "content": content}
}

// Decline is an ElicitResult declining.
func Decline() map[string]any { return map[string]any{"action": "decline"} }

// Cancel is an ElicitResult cancelling.
func Cancel() map[string]any { return map[string]any{"action": "cancel"} }

// Report is what the client saw.
type Report struct {
	// ProtocolVersion is client.getNegotiatedProtocolVersion().
	ProtocolVersion string `json:"protocolVersion"`
	// Era is client.getProtocolEra(): "modern" or "legacy".
	Era string `json:"era"`
	// ServerCapabilities is client.getServerCapabilities(), after the SDK's
	// schema stripped what it does not know (extensions survive).
	ServerCapabilities map[string]any `json:"serverCapabilities"`
	// ServerInfo is client.getServerVersion().
	ServerInfo map[string]any `json:"serverInfo"`
	// Results has one entry per step, in order.
	Results []StepResult `json:"results"`
	// Asked lists the questions the Elicit and Sample handlers received,
	// in order.
	Asked []Question `json:"asked"`
}

// Question is one request an Elicit or Sample handler received.
type Question struct {
	// Step is the index of the step running when it came.
	Step int `json:"step"`
	// Method is "elicitation/create" or "sampling/createMessage".
	Method string `json:"method"`
	// ID is the request id the handler was given: the server's JSON-RPC
	// id for a legacy server-to-client request (a number for the Go
	// SDK), the inputRequests key when the SDK fulfils an input_required
	// round.
	ID any `json:"id"`
	// Params are the request params as the handler saw them, after the
	// SDK validated them.
	Params map[string]any `json:"params"`
}

// Message is Params["message"] (an elicitation's message), or "".
func (q Question) Message() string {
	m, _ := q.Params["message"].(string)
	return m
}

// StepResult is the outcome of one step.
type StepResult struct {
	Op string `json:"op"`
	OK bool   `json:"ok"`
	// Result is the step's result as the SDK returned it (OK only).
	Result json.RawMessage `json:"result,omitempty"`
	// Error is set when !OK.
	Error *StepError `json:"error,omitempty"`
	// Wire holds the messages received during the step when Plan.Wire.
	Wire []map[string]any `json:"wire,omitempty"`
}

// StepError is an error a step ended with.
type StepError struct {
	// Code is the JSON-RPC error code: of a peer error (a ProtocolError
	// in the SDK), or of the JSON-RPC error in the body of an HTTP error
	// response (then HTTPStatus and SDKCode are set too). Zero if none.
	Code int `json:"code,omitempty"`
	// Message is the JSON-RPC error message as sent by the peer,
	// unprefixed, or else the SDK's message.
	Message string `json:"message"`
	// Data is the JSON-RPC error data (or the SdkError data), if any.
	Data any `json:"data,omitempty"`
	// SDKCode is set for an error raised inside the SDK (SdkError), such
	// as "REQUEST_TIMEOUT", "CONNECTION_CLOSED" or, for any HTTP error
	// status other than 401/403, "CLIENT_HTTP_NOT_IMPLEMENTED".
	SDKCode string `json:"sdkCode,omitempty"`
	// SDKMessage is the SDK's own message when Message came from the body.
	SDKMessage string `json:"sdkMessage,omitempty"`
	// HTTPStatus is the status of an HTTP error response.
	HTTPStatus int `json:"httpStatus,omitempty"`
	// Name is the JavaScript error name for other errors.
	Name string `json:"name,omitempty"`
}

func (e *StepError) Error() string {
	var b strings.Builder
	if e.Code != 0 {
		fmt.Fprintf(&b, "%d ", e.Code)
	}
	if e.SDKCode != "" {
		fmt.Fprintf(&b, "%s ", e.SDKCode)
	}
	if e.HTTPStatus != 0 {
		fmt.Fprintf(&b, "(HTTP %d) ", e.HTTPStatus)
	}
	b.WriteString(e.Message)
	return b.String()
}

// Map decodes the step's result as a JSON object; nil if there is none.
func (r StepResult) Map() map[string]any {
	if len(r.Result) == 0 {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(r.Result, &m); err != nil {
		return nil
	}
	return m
}

// Decode decodes the step's result into v.
func (r StepResult) Decode(v any) error {
	if !r.OK {
		return fmt.Errorf("step %s failed: %v", r.Op, r.Error)
	}
	return json.Unmarshal(r.Result, v)
}

// WireResult returns the result member of the first response received during
// the step, as sent by the server (nil if Plan.Wire was off or none came).
func (r StepResult) WireResult() map[string]any {
	for _, msg := range r.Wire {
		if res, ok := msg["result"].(map[string]any); ok {
			return res
		}
	}
	return nil
}

const (
	defaultStepTimeout = 15 * time.Second
	// processTimeout bounds one node run; it is generous because the
	// client applies its own, shorter, per-step timeout.
	processTimeout = 2 * time.Minute
)

// RunTS runs the TypeScript client through plan and returns its report. A
// step's JSON-RPC error is reported in the step's result; anything else (npm
// or node missing, bad plan, failed connect, timeout) fails the test.
func RunTS(t testing.TB, plan Plan) Report {
	t.Helper()
	dir := tsDir(t)
	npmdeps.EnsureT(t, dir)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("interop: node not found (Node.js >= 20 is required): %v", err)
	}
	if plan.TimeoutMS == 0 {
		plan.TimeoutMS = int(defaultStepTimeout / time.Millisecond)
	}
	if plan.Steps == nil {
		plan.Steps = []Step{}
	}
	input, err := json.Marshal(plan)
	if err != nil {
		t.Fatalf("interop: encode plan: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), processTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	// A stdio server inherits node's stderr; do not wait for it forever
	// if node is killed and the server lingers.
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err = cmd.Run()
	elapsed := time.Since(start)
	if stderr.Len() > 0 {
		t.Logf("interop: client.mjs stderr:\n%s", stderr.String())
	}
	if err != nil {
		if ctx.Err() != nil {
			t.Fatalf("interop: client.mjs timed out after %v\nplan: %s\nstdout: %s\nstderr: %s", elapsed, input, stdout.String(), stderr.String())
		}
		t.Fatalf("interop: client.mjs failed: %v\nplan: %s\nstdout: %s\nstderr: %s", err, input, stdout.String(), stderr.String())
	}
	var rep Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("interop: decode client.mjs report: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	if len(rep.Results) != len(plan.Steps) {
		t.Fatalf("interop: client.mjs reported %d results for %d steps\nstdout: %s", len(rep.Results), len(plan.Steps), stdout.String())
	}
	return rep
}

// tsDir is the directory holding client.mjs and package.json.
func tsDir(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("interop: cannot locate harness source")
	}
	dir := filepath.Join(filepath.Dir(file), "testdata", "ts")
	if _, err := os.Stat(filepath.Join(dir, "client.mjs")); err != nil {
		t.Fatalf("interop: client driver not found: %v", err)
	}
	return dir
}
