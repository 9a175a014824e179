//go:build integration

package gateway_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway"
)

// TestResourceURIsDoNotCollide puts the npm everything server (a template
// demo://resource/dynamic/text/{resourceId} and static documents) beside a
// Go upstream that lists a concrete URI the template matches and one of
// the everything server's own URIs, in both eras: neither upstream's
// resources disappear, each namespaced URI reaches its owner, the
// squatter's URI never takes a read of the template, and a URI both serve
// is refused naming both forms.
func TestResourceURIsDoNotCollide(t *testing.T) {
	spec := npmServers(t)
	const (
		squatted = "demo://resource/dynamic/text/1"
		shared   = "demo://resource/static/document/architecture.md"
		tmpl     = "demo://resource/dynamic/text/{resourceId}"
	)
	for _, era := range []string{modern, legacy} {
		var subs atomic.Int64
		squatter := uriServer("squatter", &subs, []string{squatted, shared})
		_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{
			spec("everything", "server-everything", "stdio"),
			{Name: "squatter", URL: serveEra(t, squatter, era)},
		}})
		cs := connect(t, url, era, nil, nil)
		uris, templates := listedURIs(t, cs)
		for _, want := range []string{"preflight:squatter/" + squatted, "preflight:squatter/" + shared, "preflight:everything/" + shared} {
			if !slices.Contains(uris, want) {
				t.Errorf("%s: resources/list lacks %q: %q", era, want, uris)
			}
		}
		for _, gone := range []string{squatted, shared} {
			if slices.Contains(uris, gone) {
				t.Errorf("%s: resources/list has %q, which two servers claim", era, gone)
			}
		}
		if !slices.Contains(templates, "preflight:everything/"+tmpl) || !slices.Contains(templates, "demo://resource/dynamic/blob/{resourceId}") {
			t.Errorf("%s: templates = %q, want the text template namespaced and the blob one unchanged", era, templates)
		}

		// The template's expansion reaches the everything server, the
		// squatter's concrete URI the squatter.
		if got, err := readText(cs, "preflight:everything/"+squatted); err != nil || !strings.HasPrefix(got, "Resource 1: This is a plaintext resource") {
			t.Errorf("%s: read of the everything server's template = %q, %v", era, got, err)
		}
		if got, err := readText(cs, "preflight:squatter/"+squatted); err != nil || got != "squatter "+squatted {
			t.Errorf("%s: read of the squatter's URI = %q, %v", era, got, err)
		}
		if got, err := readText(cs, "preflight:everything/"+shared); err != nil || !strings.Contains(got, "rchitecture") {
			t.Errorf("%s: read of the everything server's document = %.60q, %v", era, got, err)
		}
		if got, err := readText(cs, "preflight:squatter/"+shared); err != nil || got != "squatter "+shared {
			t.Errorf("%s: read of the squatter's document = %q, %v", era, got, err)
		}
		for _, uri := range []string{squatted, shared} {
			if got, err := readText(cs, uri); !refusedAsAmbiguous(err, "preflight:everything/"+uri, "preflight:squatter/"+uri) {
				t.Errorf("%s: read of %q, which both serve = %q, %v; want -32602 naming both forms", era, uri, got, err)
			}
		}
		// A URI only the template matches reaches its server as it is;
		// the squatter's namespace does not reach the everything server's
		// template.
		if got, err := readText(cs, "demo://resource/dynamic/text/2"); err != nil || !strings.HasPrefix(got, "Resource 2:") {
			t.Errorf("%s: read of a URI only the template matches = %q, %v", era, got, err)
		}
		if got, err := readText(cs, "preflight:squatter/demo://resource/dynamic/text/2"); err == nil {
			t.Errorf("%s: the squatter's namespace reached another server's template: %q", era, got)
		}
		res, err := cs.Complete(context.Background(), &mcp.CompleteParams{
			Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: "preflight:everything/" + tmpl},
			Argument: mcp.CompleteParamsArgument{Name: "resourceId", Value: "7"},
		})
		if err != nil || !slices.Equal(res.Completion.Values, []string{"7"}) {
			t.Errorf("%s: completion of the namespaced template = %+v, %v", era, res, err)
		}
		if n := subs.Load(); n != 0 {
			t.Errorf("%s: the squatter was asked for %d subscriptions", era, n)
		}
		cs.Close()
	}
}
