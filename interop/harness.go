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
// The package is meant for tests only; it imports package testing.
package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
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

// Step is one client operation. Use [Info], [List], [Call] and [Request].
type Step struct {
	// Op is "info", "list", "call" or "request".
	Op        string         `json:"op"`
	Name      string         `json:"name,omitempty"`
	Arguments map[string]any `json:"arguments,omitempty"`
	Method    string         `json:"method,omitempty"`
	Params    any            `json:"params,omitempty"`
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
	ensureDeps(t, dir)
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

var (
	depsOnce sync.Once
	depsErr  error
)

// ensureDeps makes node_modules match package.json's pinned versions,
// running `npm ci` when they do not; once per test binary.
func ensureDeps(t testing.TB, dir string) {
	t.Helper()
	depsOnce.Do(func() { depsErr = installDeps(dir) })
	if depsErr != nil {
		t.Fatalf("interop: installing the TypeScript client: %v", depsErr)
	}
}

func installDeps(dir string) error {
	if depsMismatch(dir) == "" {
		return nil
	}
	// Several test binaries may get here at once (go test ./...); npm ci
	// removes node_modules first, so serialize across processes.
	unlock, err := lockFile(filepath.Join(dir, ".npm-install.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	why := depsMismatch(dir)
	if why == "" {
		return nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return fmt.Errorf("npm not found (%s): %v", why, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("npm ci (%s): %v\n%s", why, err, out)
	}
	if why := depsMismatch(dir); why != "" {
		return fmt.Errorf("after npm ci: %s\n%s", why, out)
	}
	return nil
}

// depsMismatch says why node_modules does not hold exactly the versions
// package.json pins, or "" if it does.
func depsMismatch(dir string) string {
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return err.Error()
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		return fmt.Sprintf("package.json: %v", err)
	}
	var problems []string
	for name, want := range pkg.Dependencies {
		var installed struct {
			Version string `json:"version"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "node_modules", filepath.FromSlash(name), "package.json"))
		if err == nil {
			err = json.Unmarshal(b, &installed)
		}
		switch {
		case errors.Is(err, os.ErrNotExist):
			problems = append(problems, name+" is not installed")
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s: %v", name, err))
		case installed.Version != want:
			problems = append(problems, fmt.Sprintf("%s is %s, want %s", name, installed.Version, want))
		}
	}
	return strings.Join(problems, "; ")
}
