package gateway

import (
	"encoding/json"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/rawjson"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
	"github.com/preflightmcp/preflight/hints"
)

// toolJSON is a tool as listed to a client that did not declare the
// tool-resolution extension (plain) and to one that did (marked).
type toolJSON struct {
	plain, marked json.RawMessage
}

// toolListing precomputes a tool's JSON for both kinds of tools/list: the
// upstream's bytes with the exposed name, the seed's resolve: true (the
// gateway resolves every tool), and the extension's marker in _meta only
// for clients that declared the extension.
func toolListing(t *catalog.Tool) toolJSON {
	raw := t.Raw
	if t.Exposed != t.Name {
		name, _ := json.Marshal(t.Exposed)
		if r, err := rawjson.Set(raw, "name", name); err == nil {
			raw = r
		}
	}
	if r, err := rawjson.Set(raw, "resolve", json.RawMessage("true")); err == nil {
		raw = r
	}
	meta, hasMeta, _ := rawjson.Get(raw, "_meta")
	var plain, marked json.RawMessage = raw, raw
	marker := json.RawMessage(`{"resolvable":true}`)
	if hasMeta && len(meta) > 0 && meta[0] == '{' {
		if _, had, _ := rawjson.Get(meta, preflight.ExtensionToolResolution); had {
			m, _ := rawjson.Delete(meta, preflight.ExtensionToolResolution)
			if ms, _ := rawjson.Members(m); len(ms) == 0 {
				plain, _ = rawjson.Delete(raw, "_meta")
			} else {
				plain, _ = rawjson.Set(raw, "_meta", m)
			}
		}
		if m, err := rawjson.Set(meta, preflight.ExtensionToolResolution, marker); err == nil {
			marked, _ = rawjson.Set(raw, "_meta", m)
		}
	} else {
		m := rawjson.Object([]rawjson.Member{{Key: preflight.ExtensionToolResolution, Value: marker}})
		marked, _ = rawjson.Set(raw, "_meta", m)
	}
	if plain == nil {
		plain = raw
	}
	if marked == nil {
		marked = raw
	}
	return toolJSON{plain: plain, marked: marked}
}

// asListed returns t as a gateway whose decider is d lists it: with
// mcp.dev/requiresConfirmation true in its _meta when the gateway asks
// before every call of it (its decisions by default), so that what a
// client or lint reads of the listing is what the gateway does.
func asListed(d *stage.Decider, t *catalog.Tool) *catalog.Tool {
	if d == nil || !d.StaticConfirms(t) {
		return t
	}
	if h, err := hints.Read(t.Tool.Meta); err == nil && h.RequiresConfirmation != nil && *h.RequiresConfirmation {
		return t
	}
	meta, ok, err := rawjson.Get(t.Raw, "_meta")
	if err != nil {
		return t
	}
	if !ok || len(meta) == 0 || meta[0] != '{' {
		meta = json.RawMessage("{}")
	}
	meta, err = rawjson.Set(meta, preflight.MetaRequiresConfirmation, json.RawMessage("true"))
	if err != nil {
		return t
	}
	raw, err := rawjson.Set(t.Raw, "_meta", meta)
	if err != nil {
		return t
	}
	tt := *t
	tt.Raw = raw
	return &tt
}

// withString returns raw with its key set to exposed when that differs
// from the upstream's value.
func withString(raw json.RawMessage, key, upstream, exposed string) json.RawMessage {
	if exposed == upstream {
		return raw
	}
	v, _ := json.Marshal(exposed)
	if r, err := rawjson.Set(raw, key, v); err == nil {
		return r
	}
	return raw
}
