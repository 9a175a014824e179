// Package jaegertest gives tests a real trace backend: Jaeger v2 (the
// jaeger binary, an OpenTelemetry Collector with Jaeger's storage and
// query API), built once from its Go module at the version the tracing
// module pins (tracing/go.mod, outside the gateway's build list) and kept
// in the user's cache directory, then started for a test with in-memory
// storage, an OTLP/HTTP receiver and its query API on free loopback ports.
package jaegertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/testrig/gobuild"
	"github.com/preflightmcp/preflight/internal/freeport"
)

// module is the Go module whose cmd/jaeger is Jaeger v2's binary (in the
// module's v1.x tags); tracing/go.mod pins its version.
const module = "github.com/jaegertracing/jaeger"

// Bounds, not synchronisation: how long the build (some 2,000 packages)
// and the start may take before the test fails.
const (
	buildTimeout = 30 * time.Minute
	startTimeout = 2 * time.Minute
)

var program gobuild.Program

// Binary returns the path of the jaeger binary, building it into the
// user's cache directory the first time.
func Binary(t testing.TB) string {
	t.Helper()
	return program.Path(t, build)
}

// build returns the binary of the pinned version in the cache directory
// (where scripts/test puts it too), building it if it is not there.
func build() (string, error) {
	mod, err := gobuild.Module("tracing")
	if err != nil {
		return "", err
	}
	version, err := pinned(mod)
	if err != nil {
		return "", err
	}
	return gobuild.Cached("jaeger", version, mod, buildTimeout, module+"/cmd/jaeger")
}

// pinned returns the version of Jaeger's module that the go.mod in dir
// requires.
func pinned(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) >= 2 && f[0] == module {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("%s/go.mod does not require %s", dir, module)
}

// Jaeger is a running Jaeger.
type Jaeger struct {
	// OTLP is the URL of its OTLP/HTTP receiver (traces at /v1/traces).
	OTLP string
	// Query is the URL of its query API and UI.
	Query string

	client *http.Client
}

// Start starts a Jaeger for the test, stopped when the test ends.
func Start(t testing.TB) *Jaeger {
	t.Helper()
	bin := Binary(t)
	ports := freeport.Addrs(t, 3)
	j := &Jaeger{OTLP: "http://" + ports[0], Query: "http://" + ports[1], client: &http.Client{Transport: &http.Transport{}}}
	dir := t.TempDir()
	conf := filepath.Join(dir, "jaeger.yaml")
	if err := os.WriteFile(conf, fmt.Appendf(nil, config, ports[1], ports[2], ports[0]), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(bin, "--config", "file:"+conf)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("jaegertest: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		j.client.CloseIdleConnections()
		_ = cmd.Process.Kill()
		<-exited
	})
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for {
		resp, err := j.get(ctx, j.Query+"/api/services")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return j
			}
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("jaegertest: jaeger exited: %v\n%s", err, out.String())
		case <-ctx.Done():
			t.Fatalf("jaegertest: jaeger's query API did not answer within %s\n%s", startTimeout, out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// config is Jaeger's configuration: the query API's HTTP and gRPC
// addresses, then the OTLP/HTTP receiver's; no other listener (the
// collector's own metrics are off).
const config = `
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: memory
    http:
      endpoint: %s
    grpc:
      endpoint: %s
  jaeger_storage:
    backends:
      memory:
        memory:
          max_traces: 1000
receivers:
  otlp:
    protocols:
      http:
        endpoint: %s
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memory
`

// Trace is a trace as Jaeger's query API returns it.
type Trace struct {
	TraceID   string             `json:"traceID"`
	Spans     []Span             `json:"spans"`
	Processes map[string]Process `json:"processes"`
}

// Span is one span of a Trace.
type Span struct {
	TraceID       string      `json:"traceID"`
	SpanID        string      `json:"spanID"`
	OperationName string      `json:"operationName"`
	References    []Reference `json:"references"`
	Tags          []Tag       `json:"tags"`
	ProcessID     string      `json:"processID"`
}

// Reference links a span to its parent.
type Reference struct {
	RefType string `json:"refType"`
	TraceID string `json:"traceID"`
	SpanID  string `json:"spanID"`
}

// Tag is an attribute of a span.
type Tag struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
}

// Process is the service that made a span.
type Process struct {
	ServiceName string `json:"serviceName"`
}

// Parent returns the span's parent's id, "" for a root.
func (s Span) Parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

// Tag returns the value of the span's attribute key as text, "" if none.
func (s Span) Tag(key string) string {
	for _, t := range s.Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

// Service returns the name of the service that made s.
func (tr *Trace) Service(s Span) string { return tr.Processes[s.ProcessID].ServiceName }

// Find returns the spans named operation.
func (tr *Trace) Find(operation string) []Span {
	var out []Span
	for _, s := range tr.Spans {
		if s.OperationName == operation {
			out = append(out, s)
		}
	}
	return out
}

// Await asks for the trace until done reports it complete (spans arrive
// in batches) or ctx ends.
func (j *Jaeger) Await(ctx context.Context, traceID string, done func(*Trace) bool) (*Trace, error) {
	var last *Trace
	for {
		tr, err := j.trace(ctx, traceID)
		if err == nil && tr != nil {
			last = tr
			if done(tr) {
				return tr, nil
			}
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return last, fmt.Errorf("trace %s incomplete: %w", traceID, ctx.Err())
			}
			return nil, fmt.Errorf("trace %s not found: %v (%w)", traceID, err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Search asks for traces of service with a span named operation until
// one is there or ctx ends, and returns the latest ones (at most 20).
func (j *Jaeger) Search(ctx context.Context, service, operation string) ([]Trace, error) {
	q := url.Values{"service": {service}, "operation": {operation}, "limit": {"20"}, "lookback": {"1h"}}
	for {
		trs, err := j.traces(ctx, j.Query+"/api/traces?"+q.Encode())
		if err == nil && len(trs) > 0 {
			return trs, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no trace of %s %s: %v (%w)", service, operation, err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (j *Jaeger) trace(ctx context.Context, traceID string) (*Trace, error) {
	trs, err := j.traces(ctx, j.Query+"/api/traces/"+traceID)
	if err != nil || len(trs) == 0 {
		return nil, err
	}
	return &trs[0], nil
}

// traces reads the traces the query API answers at u.
func (j *Jaeger) traces(ctx context.Context, u string) ([]Trace, error) {
	resp, err := j.get(ctx, u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	var r struct {
		Data []Trace `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	return r.Data, nil
}

func (j *Jaeger) get(ctx context.Context, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	return j.client.Do(req)
}
