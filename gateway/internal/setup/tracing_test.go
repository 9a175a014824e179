package setup

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/preflightmcp/preflight/gateway/config"
)

// TestTracerProvider checks what the tracing section leaves to the OTEL_*
// variables: the service name and the sampler, and that spans go to the
// endpoint's /v1/traces.
func TestTracerProvider(t *testing.T) {
	// Not parallel: it sets environment variables.
	var (
		mu    sync.Mutex
		paths []string
	)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer receiver.Close()
	zero := 0.0
	for _, tc := range []struct {
		name    string
		section config.Tracing
		env     map[string]string
		service string
		sampled bool
	}{
		{name: "defaults", service: DefaultServiceName, sampled: true},
		{name: "service from the environment", env: map[string]string{"OTEL_SERVICE_NAME": "from-env"}, service: "from-env", sampled: true},
		{name: "service from the resource attributes", env: map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "service.name=billing-gw,team=a"}, service: "billing-gw", sampled: true},
		{name: "OTEL_SERVICE_NAME over the resource attributes", env: map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "service.name=billing-gw", "OTEL_SERVICE_NAME": "from-env"}, service: "from-env", sampled: true},
		{name: "service from the section", section: config.Tracing{ServiceName: "gw"}, env: map[string]string{"OTEL_SERVICE_NAME": "from-env"}, service: "gw", sampled: true},
		{name: "sampler from the environment", env: map[string]string{"OTEL_TRACES_SAMPLER": "always_off"}},
		{name: "sampler from the section", section: config.Tracing{SampleRatio: &zero}, env: map[string]string{"OTEL_TRACES_SAMPLER": "always_on"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Only the case's variables: none the machine running the
			// tests has set.
			for _, k := range []string{"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"} {
				t.Setenv(k, "")
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			tc.section.Enabled, tc.section.Endpoint = true, receiver.URL
			tp, shutdown, err := TracerProvider(tc.section)
			if err != nil {
				t.Fatal(err)
			}
			rec := tracetest.NewSpanRecorder()
			tp.RegisterSpanProcessor(rec)
			_, span := tp.Tracer("test").Start(context.Background(), "call")
			span.End()
			if err := shutdown(); err != nil {
				t.Fatal(err)
			}
			if got := span.SpanContext().IsSampled(); got != tc.sampled {
				t.Fatalf("sampled = %v, want %v", got, tc.sampled)
			}
			if !tc.sampled {
				return
			}
			s := only(t, rec.Ended())
			for _, kv := range s.Resource().Attributes() {
				if kv.Key == "service.name" && kv.Value.AsString() != tc.service {
					t.Errorf("service.name = %q, want %q", kv.Value.AsString(), tc.service)
				}
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) != 5 || paths[0] != "/v1/traces" {
		t.Errorf("the receiver got posts at %q, want one at /v1/traces for each sampled span", paths)
	}
	if _, _, err := TracerProvider(config.Tracing{}); err != nil {
		t.Errorf("off: %v", err)
	}
}

func only(t *testing.T, spans []sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan {
	t.Helper()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	return spans[0]
}
