package setup

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/preflightmcp/preflight/gateway/config"
)

// tracesURL returns the URL spans are posted to: endpoint, with the OTLP
// path (/v1/traces) when it has no path of its own.
func tracesURL(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Path != "" && u.Path != "/") {
		return endpoint // the exporter reports a bad URL
	}
	u.Path = "/v1/traces"
	return u.String()
}

// DefaultServiceName names the gateway in its traces when neither the
// configuration nor OTEL_SERVICE_NAME does.
const DefaultServiceName = "preflight"

// flushTimeout bounds the export of the spans still buffered at shutdown.
const flushTimeout = 5 * time.Second

// TracerProvider returns the tracer provider of the tracing section, which
// exports over OTLP/HTTP, and the function that flushes and stops it; nil
// and a no-op when tracing is off. What the section leaves out, the
// exporter and the SDK read from the OTEL_* variables.
func TracerProvider(t config.Tracing) (*sdktrace.TracerProvider, func() error, error) {
	if !t.Enabled {
		return nil, func() error { return nil }, nil
	}
	var eo []otlptracehttp.Option
	if t.Endpoint != "" {
		eo = append(eo, otlptracehttp.WithEndpointURL(tracesURL(t.Endpoint)))
	}
	exp, err := otlptracehttp.New(context.Background(), eo...)
	if err != nil {
		return nil, nil, fmt.Errorf("configuration: tracing: %w", err)
	}
	// Later options win: the default name, then the environment's
	// (OTEL_RESOURCE_ATTRIBUTES, then OTEL_SERVICE_NAME), then the section's.
	ro := []resource.Option{resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", DefaultServiceName)), resource.WithFromEnv()}
	if t.ServiceName != "" {
		ro = append(ro, resource.WithAttributes(attribute.String("service.name", t.ServiceName)))
	}
	res, err := resource.New(context.Background(), ro...)
	if err != nil {
		return nil, nil, fmt.Errorf("configuration: tracing: %w", err)
	}
	po := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithResource(res)}
	if r := t.SampleRatio; r != nil {
		po = append(po, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(*r))))
	}
	tp := sdktrace.NewTracerProvider(po...)
	shutdown := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
		defer cancel()
		return tp.Shutdown(ctx)
	}
	return tp, shutdown, nil
}
