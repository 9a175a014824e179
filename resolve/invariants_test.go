package resolve_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/internal/wiretest"
	"github.com/preflightmcp/preflight/resolve"
)

// cacheServer serves one legacy endpoint whose resolvable tools the test
// adds, replaces and removes while a session is open.
type cacheServer struct {
	rs   *resolve.Server
	peer *wiretest.Peer
}

func newCacheServer(t *testing.T, opts *resolve.ServerOptions) *cacheServer {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "cache", Version: "v1"}, nil)
	rs := resolve.NewServer(s, opts)
	hs := httptest.NewServer(endpoint.NewHandler(s, nil))
	t.Cleanup(hs.Close)
	p := wiretest.Legacy(hs.URL, nil)
	t.Cleanup(p.Close)
	p.Initialize(t)
	return &cacheServer{rs: rs, peer: p}
}

// add adds (or adds again) the tool "repo" with static annotations ann and
// static hints h, resolved by r.
func (c *cacheServer) add(ann *mcp.ToolAnnotations, h hints.Hints, r resolve.Resolver) {
	c.rs.AddTool(&mcp.Tool{
		Name: "repo", Description: "reads a repository", Annotations: ann, Meta: h.Write(nil),
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}},
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}, r)
}

// resolve resolves repo for path in the session and returns the resolved
// tool's _meta (seed shape), or the error.
func (c *cacheServer) resolve(t *testing.T, path string) (map[string]any, *wiretest.Error) {
	t.Helper()
	r := c.peer.Call(t, "tools/resolve", map[string]any{"name": "repo", "arguments": map[string]any{"path": path}})
	if r.Error != nil {
		return nil, r.Error
	}
	tool, _ := r.Result["tool"].(map[string]any)
	meta, _ := tool["_meta"].(map[string]any)
	return meta, nil
}

// counting returns a resolver answering r and the number of times it ran.
func counting(r resolve.Resolution) (resolve.Resolver, *atomic.Int64) {
	var n atomic.Int64
	return resolve.ResolverFunc(func(context.Context, *resolve.Call) (resolve.Resolution, error) {
		n.Add(1)
		return r, nil
	}), &n
}

func sensitive(s hints.Sensitivity) resolve.Resolution {
	return resolve.Resolution{
		Annotations: preflight.Annotations{ReadOnlyHint: true, IdempotentHint: true},
		Hints:       hints.Hints{Effect: hints.EffectRead, ResultSensitivity: s},
	}
}

var readOnlyAnn = &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}

// TestCacheReAddedResolver: a tool added again with another resolver is
// resolved by the new one within a session that remembered the old one's
// answers.
func TestCacheReAddedResolver(t *testing.T) {
	c := newCacheServer(t, nil)
	public, _ := counting(sensitive(hints.SensitivityPublic))
	c.add(readOnlyAnn, hints.Hints{}, public)
	if meta, err := c.resolve(t, "o/r"); err != nil || meta[preflight.MetaResultSensitivity] != "public" {
		t.Fatalf("first resolver: %v %+v", meta, err)
	}
	private, runs := counting(sensitive(hints.SensitivityConfidential))
	c.add(readOnlyAnn, hints.Hints{}, private)
	meta, err := c.resolve(t, "o/r")
	if err != nil || meta[preflight.MetaResultSensitivity] != "confidential" {
		t.Errorf("after adding the tool again with another resolver: %v %+v, want the new resolver's confidential", meta, err)
	}
	if runs.Load() != 1 {
		t.Errorf("new resolver ran %d times, want 1", runs.Load())
	}
	// The new answer is remembered in its turn.
	if c.resolve(t, "o/r"); runs.Load() != 1 {
		t.Errorf("new resolver ran %d times for one call twice, want 1", runs.Load())
	}
}

// TestCacheTighterStatic: a remembered answer is held to the static
// declaration of the tool as it is now. Adding the tool again with tighter
// annotations or hints, and the same resolver, withholds what the looser
// declaration allowed (-32603) instead of serving it from memory.
func TestCacheTighterStatic(t *testing.T) {
	write := resolve.Resolution{
		Annotations: preflight.Annotations{IdempotentHint: true},
		Hints:       hints.Hints{Effect: hints.EffectWrite, ResultSensitivity: hints.SensitivityConfidential},
	}
	f := false
	loose := &mcp.ToolAnnotations{DestructiveHint: &f, IdempotentHint: true, OpenWorldHint: &f}
	for _, c := range []struct {
		name   string
		ann    *mcp.ToolAnnotations
		h      hints.Hints
		exceed string
	}{
		{"annotations", readOnlyAnn, hints.Hints{}, "readOnlyHint (static true, resolved false)"},
		{"hints", loose, hints.Hints{ResultSensitivity: hints.SensitivityInternal},
			`mcp.dev/resultSensitivity (static "internal", resolved "confidential")`},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newCacheServer(t, nil)
			r, _ := counting(write)
			s.add(loose, hints.Hints{ResultSensitivity: hints.SensitivityConfidential}, r)
			if _, err := s.resolve(t, "o/r"); err != nil {
				t.Fatalf("within the loose declaration: %+v", err)
			}
			s.add(c.ann, c.h, r)
			meta, err := s.resolve(t, "o/r")
			if err == nil {
				t.Fatalf("served %v, riskier than the tightened declaration", meta)
			}
			if err.Code != preflight.CodeInternalError || !strings.Contains(err.Message, c.exceed) {
				t.Errorf("error %d %q, want -32603 naming %s", err.Code, err.Message, c.exceed)
			}
		})
	}
}

// TestCacheRemoved: removing a tool forgets its remembered answers: the
// tool is unknown, and added again (with the same resolver) it is resolved
// afresh.
func TestCacheRemoved(t *testing.T) {
	c := newCacheServer(t, nil)
	r, runs := counting(sensitive(hints.SensitivityPublic))
	c.add(readOnlyAnn, hints.Hints{}, r)
	c.resolve(t, "o/r")
	c.resolve(t, "o/r")
	if runs.Load() != 1 {
		t.Fatalf("resolver ran %d times for one call twice, want 1", runs.Load())
	}
	c.rs.RemoveTools("repo")
	if _, err := c.resolve(t, "o/r"); err == nil || err.Code != preflight.CodeInvalidParams {
		t.Errorf("removed tool: %+v, want -32602", err)
	}
	c.add(readOnlyAnn, hints.Hints{}, r)
	if c.resolve(t, "o/r"); runs.Load() != 2 {
		t.Errorf("resolver ran %d times, want 2: the answer from before the removal was served", runs.Load())
	}
}

// TestCacheBounded: a session remembers at most SessionCacheSize answers,
// and the room taken by a tool added again or removed is given back.
func TestCacheBounded(t *testing.T) {
	c := newCacheServer(t, &resolve.ServerOptions{SessionCacheSize: 2})
	r, runs := counting(sensitive(hints.SensitivityPublic))
	c.add(readOnlyAnn, hints.Hints{}, r)
	for _, p := range []string{"a", "b", "c", "a", "b", "c"} {
		c.resolve(t, p)
	}
	// a and b remembered; c computed both times.
	if runs.Load() != 4 {
		t.Errorf("full cache: resolver ran %d times for a b c a b c, want 4", runs.Load())
	}
	c.add(readOnlyAnn, hints.Hints{}, r)
	runs.Store(0)
	for _, p := range []string{"c", "c", "d", "d"} {
		c.resolve(t, p)
	}
	if runs.Load() != 2 {
		t.Errorf("after adding the tool again: resolver ran %d times for c c d d, want 2 (the old answers' room given back)", runs.Load())
	}
}

// TestCacheConcurrentReAdd: answers being computed while their tool is
// added again are never served for the new tool.
func TestCacheConcurrentReAdd(t *testing.T) {
	c := newCacheServer(t, nil)
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	slow := resolve.ResolverFunc(func(context.Context, *resolve.Call) (resolve.Resolution, error) {
		started <- struct{}{}
		<-release
		return sensitive(hints.SensitivityPublic), nil
	})
	c.add(readOnlyAnn, hints.Hints{}, slow)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.peer.Call(t, "tools/resolve", map[string]any{"name": "repo", "arguments": map[string]any{"path": "o/r"}})
	}()
	<-started
	fresh, runs := counting(sensitive(hints.SensitivityRestricted))
	c.add(readOnlyAnn, hints.Hints{}, fresh)
	close(release)
	<-done
	meta, err := c.resolve(t, "o/r")
	if err != nil || meta[preflight.MetaResultSensitivity] != "restricted" || runs.Load() != 1 {
		t.Errorf("after adding the tool again mid-resolution: %v %+v, %d runs; want the new resolver's answer", meta, err, runs.Load())
	}
}

// TestCallerView: a resolver learns who asks (session, protocol version,
// capabilities, the verified bearer token) in both eras.
func TestCallerView(t *testing.T) {
	var mu sync.Mutex
	var got []*resolve.Call
	s := mcp.NewServer(&mcp.Implementation{Name: "caller", Version: "v1"}, nil)
	rs := resolve.NewServer(s, nil)
	rs.AddTool(&mcp.Tool{Name: "whoami", Description: "reads", Annotations: readOnlyAnn,
		InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		},
		resolve.ResolverFunc(func(_ context.Context, c *resolve.Call) (resolve.Resolution, error) {
			mu.Lock()
			got = append(got, c)
			mu.Unlock()
			return sensitive(hints.SensitivityPublic), nil
		}))
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if token != "alice-token" {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: "alice", Scopes: []string{"repo:read"}, Expiration: time.Now().Add(time.Hour)}, nil
	}
	hs := httptest.NewServer(auth.RequireBearerToken(verify, nil)(endpoint.NewHandler(s, nil)))
	defer hs.Close()
	httpClient := &http.Client{Transport: bearer{"alice-token", http.DefaultTransport}}

	for _, era := range []string{preflight.ProtocolStateless, preflight.ProtocolLegacy} {
		t.Run(era, func(t *testing.T) {
			var opts *mcp.ClientSessionOptions
			if era != preflight.ProtocolStateless {
				opts = &mcp.ClientSessionOptions{ProtocolVersion: era}
			}
			client := resolve.NewClient(&mcp.Implementation{Name: "caller-test", Version: "1.2"}, nil)
			cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: httpClient}, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			mu.Lock()
			got = nil
			mu.Unlock()
			if _, err := resolve.Resolve(context.Background(), cs, "whoami", map[string]any{"n": 1}); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 1 {
				t.Fatalf("resolver ran %d times", len(got))
			}
			c := got[0]
			if c.Name != "whoami" || !reflect.DeepEqual(c.Arguments, map[string]any{"n": 1.0}) {
				t.Errorf("call %q %v", c.Name, c.Arguments)
			}
			who := c.Caller
			wantSession := cs.ID()
			if era == preflight.ProtocolStateless {
				wantSession = ""
			} else if wantSession == "" {
				t.Fatal("legacy session without an id")
			}
			if who.SessionID != wantSession {
				t.Errorf("SessionID = %q, want %q", who.SessionID, wantSession)
			}
			if who.ProtocolVersion != era {
				t.Errorf("ProtocolVersion = %q, want %q", who.ProtocolVersion, era)
			}
			if who.Capabilities == nil || who.Capabilities.Extensions[preflight.ExtensionToolResolution] == nil {
				t.Errorf("Capabilities = %+v, want the declared extension", who.Capabilities)
			}
			if who.TokenInfo == nil || who.TokenInfo.UserID != "alice" || !reflect.DeepEqual(who.TokenInfo.Scopes, []string{"repo:read"}) {
				t.Errorf("TokenInfo = %+v, want alice with repo:read", who.TokenInfo)
			}
		})
	}
}

// bearer adds a bearer token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// TestCallCannotReachTheClient: nothing in a Call leads to a session or a
// request, through which a resolver could elicit, sample or list roots.
func TestCallCannotReachTheClient(t *testing.T) {
	session := reflect.TypeFor[mcp.Session]()
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type, string)
	walk = func(rt reflect.Type, path string) {
		if seen[rt] {
			return
		}
		seen[rt] = true
		switch rt.Kind() {
		case reflect.Interface, reflect.Func, reflect.Chan:
			if rt != reflect.TypeFor[any]() {
				t.Errorf("%s is a %s, which a resolver could call or fill with anything", path, rt)
			}
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			if rt.Implements(session) {
				t.Errorf("%s is a %s, a session", path, rt)
				return
			}
			if rt.Kind() == reflect.Map {
				walk(rt.Key(), path+"[key]")
			}
			walk(rt.Elem(), path+"[]")
		case reflect.Struct:
			if reflect.PointerTo(rt).Implements(session) {
				t.Errorf("%s is a %s, a session", path, rt)
				return
			}
			for i := range rt.NumField() {
				if f := rt.Field(i); f.IsExported() {
					walk(f.Type, path+"."+f.Name)
				}
			}
		}
	}
	walk(reflect.TypeFor[resolve.Call](), "Call")
}
