package config

import "net/url"

// Tracing exports OpenTelemetry traces of the calls over OTLP/HTTP
// (docs/tracing.md). Off by default; what it leaves out takes the standard
// OTEL_* variables, then the defaults.
type Tracing struct {
	// Enabled turns tracing on.
	Enabled bool `json:"enabled,omitempty"`
	// Endpoint is the OTLP/HTTP receiver's URL; a URL without a path gets
	// /v1/traces. Empty means OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
	// OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318.
	Endpoint string `json:"endpoint,omitempty"`
	// SampleRatio is the share of new traces kept, 0 to 1; a request that
	// names a parent follows its parent's choice. Nil means
	// OTEL_TRACES_SAMPLER, else every trace.
	SampleRatio *float64 `json:"sampleRatio,omitempty"`
	// ServiceName names the gateway in the traces. Empty means
	// OTEL_SERVICE_NAME, else "preflight".
	ServiceName string `json:"serviceName,omitempty"`
}

// tracing checks the tracing section.
func (p *parser) tracing(t *Tracing) {
	if r := t.SampleRatio; r != nil && (*r < 0 || *r > 1) {
		p.fail("tracing.sampleRatio", "%v: want 0 to 1", *r)
	}
	if t.Endpoint != "" {
		u, err := url.Parse(t.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.fail("tracing.endpoint", "%q: want an http or https URL", t.Endpoint)
		}
	}
}
