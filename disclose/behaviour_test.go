package disclose_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/preflightmcp/preflight/disclose"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

// TestConcurrentSessions runs many clients at once, each in its own scope
// (legacy sessions; 2026-07-28 principals), interleaving refusals, fetches
// and calls: no client's fetch authorizes another.
func TestConcurrentSessions(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			s, _ := newMCPServer(t, nil)
			url := serve(t, s)
			for i := range 16 {
				t.Run(fmt.Sprint(i), func(t *testing.T) {
					t.Parallel()
					p := peer(t, url, era, fmt.Sprintf("user%d", i))
					msg := map[string]any{"message": fmt.Sprint(i)}
					refusal(t, call(t, p, "echo", msg))
					if i%2 == 0 {
						readMap(t, p, disclose.DefaultURI+"?tools=echo")
						succeeded(t, call(t, p, "echo", msg), fmt.Sprint(i))
					} else {
						readMap(t, p, disclose.DefaultURI+"?tools=get_data")
						refusal(t, call(t, p, "echo", msg)) // others fetched echo
					}
				})
			}
		})
	}
}

// forgetSignal is a store that reports each Forget.
type forgetSignal struct {
	disclose.Store
	forgot chan string
}

func (f *forgetSignal) Forget(ctx context.Context, key string) error {
	err := f.Store.Forget(ctx, key)
	f.forgot <- key
	return err
}

// TestSessionEndForgetsState: when a legacy session ends (DELETE), its
// state leaves the store.
func TestSessionEndForgetsState(t *testing.T) {
	mem := disclose.NewMemoryStore(nil)
	store := &forgetSignal{Store: mem, forgot: make(chan string, 1)}
	s, _ := newMCPServer(t, &disclose.Options{Store: store})
	url := serve(t, s)
	p := peer(t, url, "2025-11-25", "")
	readMap(t, p, disclose.DefaultURI+"?tools=echo")
	id := p.Session()
	if mem.Len() != 1 {
		t.Fatalf("store holds %d scopes, want 1", mem.Len())
	}
	p.Close()
	if key := <-store.forgot; key != disclose.KeyPrefixSession+id {
		t.Errorf("forgot %q, want session:%s", key, id)
	}
	if mem.Len() != 0 {
		t.Errorf("store holds %d scopes after the session ended", mem.Len())
	}
}

// TestConnectionScopes: over a connection without a session id (in-memory
// transports here, stdio likewise) each connection is its own scope.
func TestConnectionScopes(t *testing.T) {
	mem := disclose.NewMemoryStore(nil)
	store := &forgetSignal{Store: mem, forgot: make(chan string, 2)}
	s, _ := newMCPServer(t, &disclose.Options{Store: store})
	ctx := context.Background()
	connect := func() *mcp.ClientSession {
		st, ct := mcp.NewInMemoryTransports()
		if _, err := s.Connect(ctx, st, nil); err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	a, b := connect(), connect()
	if _, err := disclose.Fetch(ctx, a, "", "echo"); err != nil {
		t.Fatal(err)
	}
	res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "a"}})
	if err != nil || res.IsError {
		t.Fatalf("a: %v %v", err, res)
	}
	res, err = b.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := disclose.ResultError(res); !ok || e.Code != disclose.CodeToolDescriptionRequired {
		t.Errorf("b: %v %v", e, res)
	}
	a.Close()
	b.Close()
	if key := <-store.forgot; !strings.HasPrefix(key, disclose.KeyPrefixConnection) {
		t.Errorf("forgot %q", key)
	}
	if mem.Len() != 0 {
		t.Errorf("store holds %d scopes after the connections ended", mem.Len())
	}
}

// TestAnonymous: a 2026-07-28 request without a principal shares one scope
// by default; AnonymousOpen lets such calls through; a KeyFunc can give
// them identities.
func TestAnonymous(t *testing.T) {
	t.Run("shared", func(t *testing.T) {
		s, _ := newMCPServer(t, nil)
		url := serve(t, s)
		a, b := peer(t, url, "2026-07-28", ""), peer(t, url, "2026-07-28", "")
		refusal(t, call(t, b, "echo", map[string]any{"message": "b"}))
		readMap(t, a, disclose.DefaultURI+"?tools=echo")
		succeeded(t, call(t, b, "echo", map[string]any{"message": "b"}), "b")
		// An authenticated principal is not in the anonymous scope.
		refusal(t, call(t, peer(t, url, "2026-07-28", "carol"), "echo", map[string]any{"message": "c"}))
	})
	t.Run("open", func(t *testing.T) {
		s, _ := newMCPServer(t, &disclose.Options{Anonymous: disclose.AnonymousOpen})
		url := serve(t, s)
		succeeded(t, call(t, peer(t, url, "2026-07-28", ""), "echo", map[string]any{"message": "x"}), "x")
		refusal(t, call(t, peer(t, url, "2026-07-28", "carol"), "echo", map[string]any{"message": "c"}))
		// Legacy sessions have an identity: still enforced.
		refusal(t, call(t, peer(t, url, "2025-11-25", ""), "echo", map[string]any{"message": "l"}))
	})
	t.Run("keyfunc", func(t *testing.T) {
		// Scope by a client-chosen header, falling back to the default.
		key := func(ctx context.Context, req mcp.Request) (string, bool) {
			if ex := req.GetExtra(); ex != nil && ex.Header.Get("X-Tenant") != "" {
				return "tenant:" + ex.Header.Get("X-Tenant"), true
			}
			return disclose.DefaultKey(ctx, req)
		}
		s, _ := newMCPServer(t, &disclose.Options{Key: key, Anonymous: disclose.AnonymousOpen})
		url := serve(t, s)
		// No tenant header from wiretest: the default applies (principal).
		a := peer(t, url, "2026-07-28", "dave")
		refusal(t, call(t, a, "echo", map[string]any{"message": "d"}))
		readMap(t, a, disclose.DefaultURI+"?tools=echo")
		succeeded(t, call(t, a, "echo", map[string]any{"message": "d"}), "d")
	})
}

// TestChangedDescriptionNeedsRefetch: an authorization is for the version
// fetched; when the tool's details change the next call is refused until
// the new description is fetched.
func TestChangedDescriptionNeedsRefetch(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			s, ds := newMCPServer(t, nil)
			url := serve(t, s)
			p := peer(t, url, era, "alice")
			_, meta := readMap(t, p, disclose.DefaultURI+"?tools=echo")
			v1 := meta[disclose.MetaToolVersions].(map[string]any)["echo"]
			succeeded(t, call(t, p, "echo", map[string]any{"message": "1"}), "1")
			ds.SetDetails("echo", &disclose.Details{UsageGuidance: "Echo short strings."})
			e := refusal(t, call(t, p, "echo", map[string]any{"message": "2"}))
			if !strings.Contains(e["message"].(string), "changed") {
				t.Errorf("refusal does not say the description changed: %v", e)
			}
			m, meta := readMap(t, p, disclose.DefaultURI+"?tools=echo")
			if v2 := meta[disclose.MetaToolVersions].(map[string]any)["echo"]; v2 == v1 {
				t.Errorf("version unchanged: %v", v2)
			}
			if m["echo"].(map[string]any)["usage_guidance"] != "Echo short strings." {
				t.Errorf("new details not served: %v", m["echo"])
			}
			succeeded(t, call(t, p, "echo", map[string]any{"message": "3"}), "3")
		})
	}
}

// TestRateLimit: reads beyond the burst are refused with RATE_LIMITED and
// a retry hint; calls are not limited; other scopes have their own
// budget.
func TestRateLimit(t *testing.T) {
	s, _ := newMCPServer(t, &disclose.Options{FetchRate: rate.Every(time.Hour), FetchBurst: 2})
	url := serve(t, s)
	p := peer(t, url, "2026-07-28", "alice")
	readMap(t, p, disclose.DefaultURI+"?tools=echo")
	rpcErrorData(t, read(t, p, disclose.DefaultURI)) // counts too: MISSING_TOOL_SELECTION
	code, data := rpcErrorData(t, read(t, p, disclose.DefaultURI+"?tools=echo"))
	if code != disclose.RPCRateLimited || data["code"] != disclose.CodeRateLimited || data["retry_after_ms"].(float64) <= 0 {
		t.Errorf("code %d, data %v", code, data)
	}
	succeeded(t, call(t, p, "echo", map[string]any{"message": "x"}), "x")
	readMap(t, peer(t, url, "2026-07-28", "bob"), disclose.DefaultURI+"?tools=echo")
}

// failingStore fails every operation.
type failingStore struct{}

func (failingStore) Grant(context.Context, string, map[string]string, time.Duration) error {
	return errors.New("down")
}
func (failingStore) Lookup(context.Context, string, string) (string, bool, error) {
	return "", false, errors.New("down")
}
func (failingStore) Forget(context.Context, string) error { return errors.New("down") }

// TestStoreFailure: a failing store fails closed with
// AUTHORIZATION_UNAVAILABLE (-32603), and the server keeps serving.
func TestStoreFailure(t *testing.T) {
	s, _ := newMCPServer(t, &disclose.Options{Store: failingStore{}})
	url := serve(t, s)
	for _, era := range eras {
		p := peer(t, url, era, "alice")
		for _, r := range []*wiretest.Response{
			read(t, p, disclose.DefaultURI+"?tools=echo"),
			call(t, p, "echo", map[string]any{"message": "x"}),
		} {
			code, data := rpcErrorData(t, r)
			if code != disclose.RPCInternalError || data["code"] != disclose.CodeUnavailable {
				t.Errorf("%s: code %d, data %v", era, code, data)
			}
		}
	}
}

// TestInstructions: the seed's section 8 guidance is appended to the
// server's instructions in both eras, unless omitted.
func TestInstructions(t *testing.T) {
	for _, omit := range []bool{false, true} {
		s, _ := newMCPServer(t, &disclose.Options{OmitInstructions: omit})
		url := serve(t, s)
		for _, era := range eras {
			p := peer(t, url, era, "")
			var r map[string]any
			if era == "2025-11-25" {
				r = p.Initialize(t).Result
			} else {
				r = p.Call(t, "server/discover", nil).Result
			}
			want := "Base instructions."
			if !omit {
				want += "\n\n" + disclose.Instructions(disclose.DefaultURI)
			}
			if r["instructions"] != want {
				t.Errorf("omit=%v %s: instructions %q", omit, era, r["instructions"])
			}
		}
	}
	in := disclose.Instructions("resource:///x")
	for _, want := range []string{"two stages", "sufficient", "Never read resource:///x without the tools parameter", "resource:///x?tools=tool1,tool2"} {
		if !strings.Contains(in, want) {
			t.Errorf("instructions lack %q", want)
		}
	}
}

// TestOptions: a custom URI, the top-level schema level and the bound on
// names per read.
func TestOptions(t *testing.T) {
	const uri = "mcp://files/tool_descriptions"
	s, _ := newMCPServer(t, &disclose.Options{URI: uri, Schema: disclose.SchemaTopLevel, MaxToolsPerRead: 1})
	url := serve(t, s)
	p := peer(t, url, "2026-07-28", "alice")
	e := refusal(t, call(t, p, "echo", map[string]any{"message": "x"}))
	if e["resource_uri"] != uri+"?tools=echo" {
		t.Errorf("resource_uri %v", e["resource_uri"])
	}
	readMap(t, p, uri+"?tools=echo")
	succeeded(t, call(t, p, "echo", map[string]any{"message": "x"}), "x")
	code, data := rpcErrorData(t, read(t, p, uri+"?tools=echo,get_data"))
	if code != disclose.RPCInvalidParams || data["code"] != disclose.CodeInvalidToolSelection {
		t.Errorf("too many: %d %v", code, data)
	}
	// The seed's URI is not this server's: it is an ordinary unknown
	// resource.
	if r := read(t, p, disclose.DefaultURI+"?tools=echo"); r.Error == nil {
		t.Errorf("read of another URI: %s", r.Raw)
	}
	list := p.Call(t, "tools/list", nil)
	for _, tl := range list.Result["tools"].([]any) {
		m := tl.(map[string]any)
		if m["name"] == "get_data" {
			want := map[string]any{"type": "object", "additionalProperties": true, "properties": map[string]any{
				"query": map[string]any{"type": "string"}, "limit": map[string]any{"type": "integer"}, "sort": map[string]any{"type": "string"},
			}}
			if !reflect.DeepEqual(m["inputSchema"], want) {
				t.Errorf("top-level schema %v", m["inputSchema"])
			}
		}
	}
}

// TestArgumentsStillValidated: the listing's open schema does not loosen
// validation: the SDK still validates against the registered schema.
func TestArgumentsStillValidated(t *testing.T) {
	s, _ := newMCPServer(t, nil)
	url := serve(t, s)
	p := peer(t, url, "2026-07-28", "alice")
	readMap(t, p, disclose.DefaultURI+"?tools=get_data")
	r := call(t, p, "get_data", map[string]any{"limit": "ten"})
	if r.Error == nil && r.Result["isError"] != true {
		t.Fatalf("invalid arguments accepted: %s", r.Raw)
	}
}
