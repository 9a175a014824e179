package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/entry"
	"github.com/preflightmcp/preflight/gateway/internal/rules"
	"github.com/preflightmcp/preflight/gateway/internal/setup"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/firstwins"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

// The tests of this file put the gateway in front of upstreams that read
// JSON differently: the firstwins rig (a repeated member keeps its FIRST
// value, at every depth) over stdio ("fw", the decoded path), over
// 2026-07-28 HTTP ("fwh", the passthrough of a 2026-07-28 client's call)
// and over 2025-11-25 HTTP ("fwl", the session passthrough of a legacy
// client's call), and the Go SDK's files example (the LAST value wins) over
// HTTP ("go", the passthrough too). Decisions
// deny every delete; reads of the firstwins tool resolve read-only by a
// deployer rule; every call is audited. The requests are sent raw, over
// HTTP and over stdio, by clients of both eras.

// victim is the file every ambiguous request names; it must survive them.
const victim = "victim.txt"

// ambTools is the exposed name of each upstream's tool.
var ambTools = map[string]string{"fw": "fw__files", "fwh": "fwh__files", "fwl": "fwl__files", "go": "go__manage_files"}

// ambUpstreams are the gateway's names of the upstreams, in test order.
var ambUpstreams = []string{"fw", "fwh", "fwl", "go"}

// ambUpstream is one upstream of the rig.
type ambUpstream struct {
	name    string // the gateway's name for it
	tool    string // its own name for its tool
	dir     string // the folder its tool works on
	journal string // the firstwins journal; "" for the Go server
	wire    *wireLog
}

// journaled returns the calls the upstream executed (firstwins only).
func (u *ambUpstream) journaled(t *testing.T) []firstwins.Entry {
	t.Helper()
	if u.journal == "" {
		return nil
	}
	return firstwins.ReadJournal(t, u.journal)
}

// wireLog records the tools/call requests an HTTP upstream received, as
// they were on the wire.
type wireLog struct {
	mu    sync.Mutex
	calls []wireCall
}

type wireCall struct {
	header http.Header
	body   []byte
}

func (l *wireLog) all() []wireCall {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

func (l *wireLog) count() int { return len(l.all()) }

// recordingProxy serves a reverse proxy to target (an MCP endpoint) and
// records the tools/call requests that cross it.
func recordingProxy(t *testing.T, target string) (string, *wireLog) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	log := &wireLog{}
	// A connection of its own per request: one dialed for a request
	// cancelled on the way would hold the upstream's shutdown.
	transport := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(transport.CloseIdleConnections)
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.URL.Path, pr.Out.URL.RawPath = u.Scheme, u.Host, u.Path, ""
			pr.Out.Host = u.Host
		},
		Transport:     transport,
		FlushInterval: -1,
	}
	return serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"tools/call"`)) {
				log.mu.Lock()
				log.calls = append(log.calls, wireCall{header: r.Header.Clone(), body: body})
				log.mu.Unlock()
			}
		}
		rp.ServeHTTP(w, r)
	})), log
}

// startFirstWinsHTTP runs the firstwins rig over HTTP in era and returns
// its URL; it is interrupted when the test ends.
func startFirstWinsHTTP(t *testing.T, dir, journal, era string) string {
	t.Helper()
	cmd := exec.Command(firstwins.Build(t), "-dir", dir, "-journal", journal, "-era", era, "-http", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			t.Errorf("firstwins -http -era %s: %v\n%s", era, err, stderr.String())
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("firstwins -http printed no URL: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(line)
}

// ambRig is a gateway, with decisions and an audit log, in front of the
// four upstreams.
type ambRig struct {
	g     *gateway.Gateway
	url   string
	audit string // the audit store's spec
	ups   map[string]*ambUpstream
}

func newAmbRig(t *testing.T) *ambRig {
	t.Helper()
	bin := firstwins.Build(t)
	base := t.TempDir()
	rig := &ambRig{audit: "sqlite:" + filepath.Join(base, "audit.db"), ups: map[string]*ambUpstream{}}
	for _, name := range ambUpstreams {
		u := &ambUpstream{name: name, tool: "files", dir: filepath.Join(base, name)}
		if name == "go" {
			u.tool = "manage_files"
		} else {
			u.journal = filepath.Join(base, name+".journal")
		}
		if err := os.Mkdir(u.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		rig.ups[name] = u
	}
	rig.write(t, victim, "the victim must survive\n")

	fw := rig.ups["fw"]
	specs := []gateway.UpstreamSpec{{Name: "fw", Command: bin, Args: []string{"-dir", fw.dir, "-journal", fw.journal, "-era", "both"}}}
	var fwhURL, fwlURL, goURL string
	fwhURL, rig.ups["fwh"].wire = recordingProxy(t, startFirstWinsHTTP(t, rig.ups["fwh"].dir, rig.ups["fwh"].journal, modern))
	fwlURL, rig.ups["fwl"].wire = recordingProxy(t, startFirstWinsHTTP(t, rig.ups["fwl"].dir, rig.ups["fwl"].journal, legacy))
	root, err := os.OpenRoot(rig.ups["go"].dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	goURL, rig.ups["go"].wire = recordingProxy(t, filesOn(t, root, nil))
	specs = append(specs,
		gateway.UpstreamSpec{Name: "fwh", URL: fwhURL, Era: modern},
		gateway.UpstreamSpec{Name: "fwl", URL: fwlURL, Era: legacy},
		gateway.UpstreamSpec{Name: "go", URL: goURL})

	// The firstwins tool is declared destructive; a read of it resolves
	// read-only by a deployer rule. The Go server resolves its calls
	// itself (tools/resolve).
	yes, no := true, false
	reads := rules.Server{Rules: []rules.Rule{{Name: "reads", Tools: []string{"files"}, When: `args.action == "read"`,
		Annotations: rules.AnnotationPatch{ReadOnlyHint: &yes, DestructiveHint: &no}, Hints: rules.HintPatch{Effect: "read"}}}}
	resolver, err := setup.NewRulesResolver(rules.Config{Servers: map[string]rules.Server{"fw": reads, "fwh": reads, "fwl": reads}},
		&setup.RulesOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	auditor, store, err := setup.OpenAudit(context.Background(), rig.audit,
		&audit.Options{Levels: map[hints.Effect]audit.Level{hints.EffectRead: audit.LevelFull}})
	if err != nil {
		t.Fatal(err)
	}
	rig.g, rig.url = startGateway(t, &gateway.Options{
		Upstreams: specs,
		Resolver:  resolver,
		Decisions: &stage.DecideOptions{Rules: []stage.DecisionRule{{
			Name: "no-deletes", Tools: []string{"files", "manage_files"}, When: `args.action == "delete"`,
			Verdict: call.Deny, Reason: "deletes are not allowed here",
		}}},
		Auditor: auditor, AuditStore: store,
	})
	for _, name := range ambUpstreams {
		if _, ok := rig.g.View().Tool(ambTools[name]); !ok {
			t.Fatalf("the gateway does not list %s", ambTools[name])
		}
	}
	return rig
}

// write makes a file of the same name and content in every upstream's
// folder.
func (r *ambRig) write(t *testing.T, name, content string) {
	t.Helper()
	for _, u := range r.ups {
		if err := os.WriteFile(filepath.Join(u.dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// traces counts what reached each upstream: journal entries and tools/call
// requests on the wire.
func (r *ambRig) traces(t *testing.T) map[string][2]int {
	t.Helper()
	out := map[string][2]int{}
	for name, u := range r.ups {
		out[name] = [2]int{len(u.journaled(t)), u.wire.count()}
	}
	return out
}

// auditRecords closes the gateway (writing what the auditor buffers) and
// returns every record of the audit log.
func (r *ambRig) auditRecords(t *testing.T) []*audit.Record {
	t.Helper()
	r.g.Close()
	return auditLog(t, r.audit)
}

// The clients.

// ambClient sends raw requests to the gateway in one era over one
// transport.
type ambClient struct {
	era, transport string
	url            string
	session        string // legacy HTTP
	stdio          *stdioPeer
}

func (c *ambClient) String() string { return c.era + "/" + c.transport }

// meta is what a request's params carry after name: the per-request _meta
// of a 2026-07-28 request, nothing for a legacy session.
func (c *ambClient) meta() string {
	if c.era != modern {
		return ""
	}
	return `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"ambiguity","version":"0"}}`
}

var ambIDs atomic.Int64

// send sends body, a request naming tool, and returns the HTTP status (0
// over stdio) and the response; over stdio, the response awaited is the
// one with id (the raw JSON text of the id).
func (c *ambClient) send(t *testing.T, id, tool string, body []byte) (int, *wiretest.Response) {
	t.Helper()
	if c.stdio != nil {
		return 0, c.stdio.call(t, id, body)
	}
	req, err := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", c.era)
	if c.era == modern {
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", tool)
	} else {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r, err := readReply(resp)
	if err != nil {
		t.Fatalf("%s: HTTP %d: %v", c, resp.StatusCode, err)
	}
	return resp.StatusCode, r
}

// readReply reads the JSON-RPC response of a JSON or event-stream reply.
func readReply(resp *http.Response) (*wiretest.Response, error) {
	var raw []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data:")
			if !ok {
				continue
			}
			var probe struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal([]byte(data), &probe) == nil && probe.Method == "" && probe.ID != nil {
				raw = []byte(strings.TrimSpace(data))
				break
			}
		}
	} else {
		raw, _ = io.ReadAll(resp.Body)
	}
	return decodeReply(raw)
}

func decodeReply(raw []byte) (*wiretest.Response, error) {
	var r wiretest.Response
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("no JSON-RPC response in %q: %v", raw, err)
	}
	r.Raw = raw
	return &r, nil
}

// stdioPeer is a client of the gateway over stdio (Gateway.ServeStdio).
type stdioPeer struct {
	w     io.WriteCloser
	lines chan []byte
}

// serveStdioPeer serves one stdio client until the test ends; a legacy
// client runs the initialize handshake first.
func serveStdioPeer(t *testing.T, g *gateway.Gateway, era string) *stdioPeer {
	t.Helper()
	toGateway, fromClient := io.Pipe()
	toClient, fromGateway := io.Pipe()
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- g.ServeStdio(ctx, toGateway, fromGateway) }()
	p := &stdioPeer{w: fromClient, lines: make(chan []byte, 64)}
	read := make(chan struct{})
	go func() {
		defer close(read)
		defer close(p.lines)
		r := bufio.NewReaderSize(toClient, 64<<10)
		for {
			line, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				p.lines <- bytes.TrimSpace(line)
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		fromClient.Close()
		stop()
		if err := <-served; err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) {
			t.Errorf("ServeStdio: %v", err)
		}
		toClient.Close()
		for range p.lines {
		}
		<-read
	})
	if era == legacy {
		id := strconv.FormatInt(ambIDs.Add(1), 10)
		r := p.call(t, id, []byte(`{"jsonrpc":"2.0","id":`+id+`,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"ambiguity","version":"0"}}}`))
		if r.Error != nil {
			t.Fatalf("stdio initialize: %s", r.Raw)
		}
		p.write(t, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	}
	return p
}

func (p *stdioPeer) write(t *testing.T, line []byte) {
	t.Helper()
	if _, err := p.w.Write(append(slices.Clip(line), '\n')); err != nil {
		t.Fatalf("writing to the gateway: %v", err)
	}
}

// call writes one line and returns the response with id, skipping the
// gateway's other messages.
func (p *stdioPeer) call(t *testing.T, id string, line []byte) *wiretest.Response {
	t.Helper()
	p.write(t, line)
	timeout := time.After(15 * time.Second)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatal("the gateway closed stdout")
			}
			var probe struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(l, &probe) != nil || probe.Method != "" || string(probe.ID) != id {
				continue
			}
			r, err := decodeReply(l)
			if err != nil {
				t.Fatal(err)
			}
			return r
		case <-timeout:
			t.Fatalf("no response to %s over stdio", id)
		}
	}
}

// ambClients returns a client of each era over each transport.
func ambClients(t *testing.T, rig *ambRig) []*ambClient {
	t.Helper()
	var out []*ambClient
	for _, era := range []string{modern, legacy} {
		c := &ambClient{era: era, transport: "http", url: rig.url}
		if era == legacy {
			p := wiretest.Legacy(rig.url, nil)
			p.Initialize(t)
			t.Cleanup(p.Close)
			c.session = p.Session()
		}
		out = append(out, c, &ambClient{era: era, transport: "stdio", stdio: serveStdioPeer(t, rig.g, era)})
	}
	return out
}

// The attacks.

// ambAttack is a request two JSON readers could read differently.
type ambAttack struct {
	name string
	// body is the request; {ID}, {TOOL}, {OTHER} (another tool) and
	// {META} (the client's _meta member, with its leading comma) are
	// replaced.
	body string
	code int64
	// want are parts of the error message: the member named, and why.
	want []string
	// nullID: the error answers id null (the entry found no one id to
	// answer under).
	nullID bool
}

// ambCall is a tools/call whose params are name, the client's _meta and
// rest.
func ambCall(rest string) string {
	return `{"jsonrpc":"2.0","id":{ID},"method":"tools/call","params":{"name":"{TOOL}"{META},` + rest + `}}`
}

const (
	readVictim   = `{"action":"read","path":"victim.txt"}`
	deleteVictim = `{"action":"delete","path":"victim.txt"}`
)

var ambAttacks = []ambAttack{
	// a. Two "arguments": a first-wins reader runs the first, the gateway's
	// Go readers the last.
	{"arguments-twice/read-then-delete", ambCall(`"arguments":` + readVictim + `,"arguments":` + deleteVictim), -32602,
		[]string{`repeated member "arguments" in params`}, false},
	{"arguments-twice/delete-then-read", ambCall(`"arguments":` + deleteVictim + `,"arguments":` + readVictim), -32602,
		[]string{`repeated member "arguments" in params`}, false},
	// b. An escaped spelling of "arguments" beside it.
	{"arguments-escaped/escaped-first", ambCall(`"argum\u0065nts":` + deleteVictim + `,"arguments":` + readVictim), -32602,
		[]string{`repeated member "arguments" in params (spelled with escapes)`}, false},
	{"arguments-escaped/escaped-last", ambCall(`"arguments":` + readVictim + `,"argum\u0065nts":` + deleteVictim), -32602,
		[]string{`repeated member "arguments" in params (spelled with escapes)`}, false},
	// c. A repeated member inside the arguments.
	{"action-twice/delete-then-read", ambCall(`"arguments":{"action":"delete","path":"victim.txt","action":"read"}`), -32602,
		[]string{`repeated member "action" in params.arguments`}, false},
	{"action-twice/read-then-delete", ambCall(`"arguments":{"action":"read","path":"victim.txt","action":"delete"}`), -32602,
		[]string{`repeated member "action" in params.arguments`}, false},
	// d. A case variant of "arguments" (encoding/json matches struct
	// fields case-insensitively).
	{"arguments-case/variant-first", ambCall(`"Arguments":` + deleteVictim + `,"arguments":` + readVictim), -32602,
		[]string{`params.Arguments: key "Arguments" differs only in case from "arguments"`}, false},
	{"arguments-case/variant-last", ambCall(`"arguments":` + readVictim + `,"Arguments":` + deleteVictim), -32602,
		[]string{`params.arguments: keys "arguments" and "Arguments" differ only in case`}, false},
	// e. A case variant and an escaped spelling of "action".
	{"action-case", ambCall(`"arguments":{"action":"read","path":"victim.txt","Action":"delete"}`), -32602,
		[]string{`params.arguments.action: keys "action" and "Action" differ only in case`}, false},
	{"action-escaped", ambCall(`"arguments":{"\u0061ction":"delete","path":"victim.txt","action":"read"}`), -32602,
		[]string{`repeated member "action" in params.arguments (spelled with escapes)`}, false},
	// f. The envelope.
	{"params-twice", `{"jsonrpc":"2.0","id":{ID},"method":"tools/call","params":{"name":"{TOOL}"{META},"arguments":` + readVictim +
		`},"params":{"name":"{TOOL}"{META},"arguments":` + deleteVictim + `}}`, -32600,
		[]string{`repeated member "params"`}, false},
	{"method-twice", `{"jsonrpc":"2.0","id":{ID},"method":"tools/list","method":"tools/call","params":{"name":"{TOOL}"{META},"arguments":` + deleteVictim + `}}`, -32600,
		[]string{`repeated member "method"`}, false},
	{"name-twice", `{"jsonrpc":"2.0","id":{ID},"method":"tools/call","params":{"name":"{TOOL}","name":"{OTHER}"{META},"arguments":` + deleteVictim + `}}`, -32602,
		[]string{`repeated member "name" in params`}, false},
	{"params-case", `{"jsonrpc":"2.0","id":{ID},"method":"tools/call","Params":{"name":"{TOOL}"{META},"arguments":` + deleteVictim +
		`},"params":{"name":"{TOOL}"{META},"arguments":` + readVictim + `}}`, -32600,
		[]string{`Params`, `"params"`}, false},
	// g. Strings JSON readers decode differently.
	{"lone-surrogate", ambCall(`"arguments":{"action":"read","path":"vict\ud800im.txt"}`), -32602,
		[]string{`params.arguments.path`, `\ud800 outside a UTF-16 surrogate pair`}, false},
	{"invalid-utf8", ambCall(`"arguments":{"action":"read","path":"vict` + "\xff" + `im.txt"}`), -32602,
		[]string{`params.arguments.path`, `not valid UTF-8`}, false},
	{"nul-in-key", ambCall(`"arguments":{"action":"read","path":"victim.txt","action\u0000":"delete"}`), -32602,
		[]string{`params.arguments."action\x00"`, `contains NUL`}, false},
	// And numbers and depth.
	{"number-overflow", ambCall(`"arguments":{"action":"read","path":"victim.txt","size":1e400}`), -32602,
		[]string{`params.arguments.size`, `overflows a float64`}, false},
	{"nesting", ambCall(`"arguments":{"action":"read","path":"victim.txt","deep":` + strings.Repeat("[", 120) + strings.Repeat("]", 120) + `}`), -32602,
		[]string{`params.arguments.`, `nesting deeper than 100 levels`}, false},
}

// TestAmbiguousRequestsRefused sends every ambiguous request, raw, from
// clients of both eras over HTTP and stdio, naming each upstream's tool:
// the entry refuses it (-32600 in the envelope, -32602 inside params, the
// member named; HTTP 400), under the request's id; nothing reaches any
// upstream (no journal entry, no tools/call on the wire, the victim file
// intact), and the audit log has no record of it.
func TestAmbiguousRequestsRefused(t *testing.T) {
	rig := newAmbRig(t)
	clients := ambClients(t, rig)
	before := rig.traces(t)
	for _, a := range ambAttacks {
		t.Run(a.name, func(t *testing.T) {
			for _, c := range clients {
				for i, up := range ambUpstreams {
					t.Run(c.era+"/"+c.transport+"/"+up, func(t *testing.T) {
						id := strconv.FormatInt(ambIDs.Add(1), 10)
						body := strings.NewReplacer("{ID}", id, "{TOOL}", ambTools[up],
							"{OTHER}", ambTools[ambUpstreams[(i+1)%len(ambUpstreams)]], "{META}", c.meta()).Replace(a.body)
						answer := id
						if a.nullID {
							answer = "null"
						}
						status, r := c.send(t, answer, ambTools[up], []byte(body))
						if c.transport == "http" && status != http.StatusBadRequest {
							t.Errorf("HTTP %d, want 400: %s", status, r.Raw)
						}
						if r.Error == nil || r.Error.Code != a.code {
							t.Fatalf("want a JSON-RPC error %d, got %s", a.code, r.Raw)
						}
						if string(r.ID) != answer {
							t.Errorf("the error answers id %s, want %s", r.ID, answer)
						}
						for _, w := range a.want {
							if !strings.Contains(r.Error.Message, w) {
								t.Errorf("message %q lacks %q", r.Error.Message, w)
							}
						}
						if now := rig.traces(t); !maps.Equal(now, before) {
							t.Errorf("the request reached an upstream: journal entries and wire calls were %v, are %v", before, now)
						}
					})
				}
			}
		})
	}
	for name, u := range rig.ups {
		if _, err := os.Stat(filepath.Join(u.dir, victim)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}

	// The connections went on: a well-formed read on each is served, and
	// is the only thing in the audit log.
	rig.write(t, "after.txt", "after\n")
	n := 0
	for _, c := range clients {
		id := strconv.FormatInt(ambIDs.Add(1), 10)
		body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"fwh__files"` + c.meta() + `,"arguments":{"action":"read","path":"after.txt"}}}`
		if _, r := c.send(t, id, "fwh__files", []byte(body)); r.Error != nil || r.Result["isError"] == true || resultText(r) != "after\n" {
			t.Errorf("%s: a read after the refusals: %s", c, r.Raw)
		}
		n++
	}
	recs := rig.auditRecords(t)
	if len(recs) != n {
		t.Errorf("%d audit records, want %d (the reads after the refusals)", len(recs), n)
	}
	for _, rec := range recs {
		if rec.Server != "fwh" || !strings.Contains(string(rec.Args), "after.txt") || strings.Contains(string(rec.Args), "victim") {
			t.Errorf("audit record of something else than the reads after the refusals: %+v (args %s)", rec, rec.Args)
		}
	}
}

// wireParams decodes the params of a tools/call an upstream received,
// after checking that the gateway's own strict reader finds the request
// unambiguous.
func wireParams(t *testing.T, body []byte) map[string]json.RawMessage {
	t.Helper()
	if _, err := entry.Parse(body); err != nil {
		t.Errorf("the upstream received an ambiguous request: %v\n%s", err, body)
	}
	var msg struct {
		Params map[string]json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatalf("the upstream received %s: %v", body, err)
	}
	return msg.Params
}

func decodeArgs(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("arguments %s: %v", raw, err)
	}
	return m
}

// ranOnce checks that exactly one call reached u since journal and wire
// were read: the executed call's arguments (journal) and those on the
// wire are want. It returns the arguments the upstream ran with.
func ranOnce(t *testing.T, u *ambUpstream, journal []firstwins.Entry, wire []wireCall, want map[string]any) map[string]any {
	t.Helper()
	var ran map[string]any
	if u.journal != "" {
		now := u.journaled(t)
		if len(now) != len(journal)+1 {
			t.Fatalf("%s journaled %d calls, want 1: %+v", u.name, len(now)-len(journal), now[len(journal):])
		}
		e := now[len(now)-1]
		if e.Tool != u.tool || e.Action != want["action"] || e.Path != want["path"] || !reflect.DeepEqual(e.Args, want) {
			t.Errorf("%s ran %+v, the gateway judged %v", u.name, e, want)
		}
		ran = e.Args
	}
	if u.wire != nil {
		now := u.wire.all()
		if len(now) != len(wire)+1 {
			t.Fatalf("%s received %d tools/call requests, want 1", u.name, len(now)-len(wire))
		}
		p := wireParams(t, now[len(now)-1].body)
		if got := decodeArgs(t, p["arguments"]); !reflect.DeepEqual(got, want) {
			t.Errorf("%s received arguments %s, the gateway judged %v", u.name, p["arguments"], want)
		} else if ran == nil {
			ran = got
		}
		var name string
		if json.Unmarshal(p["name"], &name); name != u.tool {
			t.Errorf("%s received the tool name %s, want %q", u.name, p["name"], u.tool)
		}
	}
	return ran
}

// TestJudgedIsRun sends well-formed calls, raw, from clients of both eras
// over HTTP and stdio, to each upstream: a read is forwarded and the
// upstream runs exactly the arguments the gateway judged (the firstwins
// journal, the request on the wire, the result); a read whose key is
// spelled with an escape is run as the key it decodes to; a delete is
// denied by the rule, and nothing reaches the upstream. The audit log has
// one record of each call, the read with effect read and decision allow,
// the delete denied, with the arguments the upstream ran.
func TestJudgedIsRun(t *testing.T) {
	rig := newAmbRig(t)
	clients := ambClients(t, rig)
	type control struct {
		up, kind, path string
		judged, ran    map[string]any
	}
	kinds := []struct {
		name string
		// args are the arguments sent, with {P} for the path; judged
		// what the gateway reads in them; runs, whether it forwards them.
		args   string
		judged func(path string) map[string]any
		runs   bool
	}{
		{"read", `{"action":"read","path":"{P}"}`,
			func(p string) map[string]any { return map[string]any{"action": "read", "path": p} }, true},
		{"read-escaped-key", `{"\u0061ction":"read","p\u0061th":"{P}"}`,
			func(p string) map[string]any { return map[string]any{"action": "read", "path": p} }, true},
		{"delete", `{"action":"delete","path":"{P}"}`,
			func(p string) map[string]any { return map[string]any{"action": "delete", "path": p} }, false},
		// A lone case variant is no second reading for a JSON parser, but
		// a server that binds arguments to a struct with encoding/json
		// reads it as "action": the resolve stage, which knows the tool's
		// schema, refuses it (-32602), and the audit records the refusal.
		{"delete-case-variant", `{"Action":"delete","path":"{P}"}`,
			func(p string) map[string]any { return map[string]any{"Action": "delete", "path": p} }, false},
	}
	refused := func(kind string) bool { return kind == "delete-case-variant" }
	var controls []*control
	for _, c := range clients {
		for _, k := range kinds {
			rig.write(t, k.name+"-"+c.era+"-"+c.transport+".txt", k.name+" by "+c.String()+"\n")
		}
	}
	for _, c := range clients {
		for _, up := range ambUpstreams {
			for _, k := range kinds {
				t.Run(c.era+"/"+c.transport+"/"+up+"/"+k.name, func(t *testing.T) {
					u := rig.ups[up]
					ctl := &control{up: up, kind: k.name, path: k.name + "-" + c.era + "-" + c.transport + ".txt"}
					ctl.judged = k.judged(ctl.path)
					id := strconv.FormatInt(ambIDs.Add(1), 10)
					body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + ambTools[up] + `"` + c.meta() +
						`,"arguments":` + strings.ReplaceAll(k.args, "{P}", ctl.path) + `}}`
					journal, wire := u.journaled(t), u.wire.all()
					status, r := c.send(t, id, ambTools[up], []byte(body))
					if refused(k.name) {
						if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, `params.arguments.Action differs from the tool's property "action" only in case`) || string(r.ID) != id {
							t.Errorf("the case variant was not refused: %s", r.Raw)
						}
						if len(u.journaled(t)) != len(journal) || u.wire.count() != len(wire) {
							t.Errorf("the refused case variant reached %s", up)
						}
						controls = append(controls, ctl)
						return
					}
					if c.transport == "http" && status != http.StatusOK {
						t.Errorf("HTTP %d", status)
					}
					if r.Error != nil || string(r.ID) != id {
						t.Fatalf("response: %s", r.Raw)
					}
					if !k.runs {
						if r.Result["isError"] != true || !strings.Contains(resultText(r), "It was not run, and the upstream was not contacted") {
							t.Errorf("the delete was not denied: %s", r.Raw)
						}
						if len(u.journaled(t)) != len(journal) || u.wire.count() != len(wire) {
							t.Errorf("the denied delete reached %s", up)
						}
						if _, err := os.Stat(filepath.Join(u.dir, ctl.path)); err != nil {
							t.Errorf("the denied delete ran: %v", err)
						}
					} else {
						if r.Result["isError"] == true || !strings.Contains(resultText(r), k.name+" by "+c.String()) {
							t.Errorf("read: %s", r.Raw)
						}
						ctl.ran = ranOnce(t, u, journal, wire, ctl.judged)
					}
					controls = append(controls, ctl)
				})
			}
		}
	}

	recs := rig.auditRecords(t)
	if len(recs) != len(controls) {
		t.Errorf("%d audit records for %d calls", len(recs), len(controls))
	}
	for _, ctl := range controls {
		var found []*audit.Record
		for _, rec := range recs {
			if rec.Server == ctl.up && strings.Contains(string(rec.Args), `"`+ctl.path+`"`) {
				found = append(found, rec)
			}
		}
		what := ctl.up + " " + ctl.path
		if len(found) != 1 {
			t.Errorf("%s: %d audit records, want 1", what, len(found))
			continue
		}
		rec := found[0]
		audited := decodeArgs(t, rec.Args)
		if rec.Tool != rig.ups[ctl.up].tool || !reflect.DeepEqual(audited, ctl.judged) {
			t.Errorf("%s: audited %s %s, judged %v", what, rec.Tool, rec.Args, ctl.judged)
		}
		if refused(ctl.kind) {
			if rec.Outcome != audit.OutcomeError {
				t.Errorf("%s: audited outcome %s; want error (refused before it was decided)", what, rec.Outcome)
			}
			continue
		}
		if ctl.ran == nil {
			if rec.Decision != audit.Deny || rec.Outcome != audit.OutcomeDenied {
				t.Errorf("%s: audited decision %s, outcome %s; want deny, denied", what, rec.Decision, rec.Outcome)
			}
			continue
		}
		if rec.Effect != hints.EffectRead || rec.Decision != audit.Allow || rec.Outcome != audit.OutcomeOK {
			t.Errorf("%s: audited effect %s, decision %s, outcome %s; want read, allow, ok", what, rec.Effect, rec.Decision, rec.Outcome)
		}
		if !reflect.DeepEqual(audited, ctl.ran) {
			t.Errorf("%s: the upstream ran %v, the gateway audited %v", what, ctl.ran, audited)
		}
	}
}

// TestJudgedOnlyIsForwarded sends a read with members the gateway does not
// judge (an "x-vendor" member of params asking a delete, an "x-top" member
// of the message) from clients of both eras, over both transports, to each
// upstream: what reaches the upstream is re-encoded from what was judged
// (name, arguments, _meta only; an unambiguous request) and the upstream
// runs the read. A 2026-07-28 call to a 2026-07-28 HTTP upstream takes the
// passthrough (the client's own _meta reaches the upstream), a legacy
// call to a legacy HTTP upstream the session passthrough (the gateway's
// id).
func TestJudgedOnlyIsForwarded(t *testing.T) {
	rig := newAmbRig(t)
	clients := ambClients(t, rig)
	for _, c := range clients {
		rig.write(t, "extra-"+c.era+"-"+c.transport+".txt", "extra\n")
	}
	for _, c := range clients {
		for _, up := range ambUpstreams {
			t.Run(c.era+"/"+c.transport+"/"+up, func(t *testing.T) {
				u := rig.ups[up]
				path := "extra-" + c.era + "-" + c.transport + ".txt"
				id := strconv.FormatInt(ambIDs.Add(1), 10)
				body := `{"jsonrpc":"2.0","id":` + id + `,"x-top":{"method":"tools/call"},"method":"tools/call","params":{"name":"` + ambTools[up] + `"` + c.meta() +
					`,"arguments":{"action":"read","path":"` + path + `"},"x-vendor":{"action":"delete","path":"victim.txt"}}}`
				journal, wire := u.journaled(t), u.wire.all()
				if _, r := c.send(t, id, ambTools[up], []byte(body)); r.Error != nil || r.Result["isError"] == true || resultText(r) == "" {
					t.Fatalf("read: %s", r.Raw)
				}
				ranOnce(t, u, journal, wire, map[string]any{"action": "read", "path": path})
				if u.wire == nil {
					return
				}
				got := u.wire.all()[len(wire)]
				if bytes.Contains(got.body, []byte("x-vendor")) || bytes.Contains(got.body, []byte("x-top")) || bytes.Contains(got.body, []byte(victim)) {
					t.Errorf("%s received members the gateway did not judge: %s", up, got.body)
				}
				p := wireParams(t, got.body)
				for k := range p {
					if k != "name" && k != "arguments" && k != "_meta" {
						t.Errorf("%s received params.%s: %s", up, k, got.body)
					}
				}
				switch {
				case c.era == modern && c.transport == "http" && (up == "fwh" || up == "go"):
					if !bytes.Contains(p["_meta"], []byte(`"ambiguity"`)) {
						t.Errorf("the call did not take the passthrough (the upstream got _meta %s)", p["_meta"])
					}
				case c.era == legacy && c.transport == "http" && up == "fwl":
					var msg struct {
						ID json.RawMessage `json:"id"`
					}
					if json.Unmarshal(got.body, &msg); !strings.HasPrefix(string(msg.ID), `"preflight-call-`) {
						t.Errorf("the call did not take the session passthrough (id %s)", msg.ID)
					}
				}
			})
		}
	}
	if _, err := os.Stat(filepath.Join(rig.ups["fwh"].dir, victim)); err != nil {
		t.Error(err)
	}
}

// TestJudgedHeadersForwarded sends a 2026-07-28 read over HTTP to the
// upstreams its call passes through to (fwh, go) with standard headers
// that disagree with the body or with themselves: Mcp-Param headers for
// arguments the tool does not mirror into headers (SEP-2243), naming a
// delete of the victim; a second Mcp-Method; a second
// MCP-Protocol-Version. The gateway judges the body and the first value
// of each header, so either it refuses the request (HTTP 400, nothing
// forwarded) or what the upstream receives is what was judged: one value
// of each standard header, equal to the judged one, and no Mcp-Param
// header the judged arguments do not back.
func TestJudgedHeadersForwarded(t *testing.T) {
	rig := newAmbRig(t)
	rig.write(t, "headers.txt", "headers\n")
	for _, tc := range []struct {
		name   string
		header http.Header
	}{
		{"mcp-param-unjudged", http.Header{"Mcp-Param-Action": {"delete"}, "Mcp-Param-Path": {victim}}},
		{"mcp-method-twice", http.Header{"Mcp-Method": {"tools/call", "tools/list"}}},
		{"protocol-version-twice", http.Header{"Mcp-Protocol-Version": {modern, legacy}}},
	} {
		for _, up := range []string{"fwh", "go"} {
			t.Run(tc.name+"/"+up, func(t *testing.T) {
				u := rig.ups[up]
				c := &ambClient{era: modern, transport: "http", url: rig.url}
				body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + ambTools[up] + `"` + c.meta() +
					`,"arguments":{"action":"read","path":"headers.txt"}}}`
				req, err := http.NewRequest(http.MethodPost, rig.url, strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				req.Header = http.Header{
					"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
					"Mcp-Protocol-Version": {modern}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {ambTools[up]},
				}
				maps.Copy(req.Header, tc.header)
				wire := u.wire.all()
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				r, err := readReply(resp)
				resp.Body.Close()
				if err != nil {
					t.Fatal(err)
				}
				now := u.wire.all()
				if resp.StatusCode == http.StatusBadRequest && r.Error != nil {
					if len(now) != len(wire) {
						t.Errorf("the refused request reached %s", up)
					}
					return // refused: nothing to compare
				}
				if r.Error != nil || len(now) != len(wire)+1 {
					t.Fatalf("HTTP %d %s; %d requests reached %s", resp.StatusCode, r.Raw, len(now)-len(wire), up)
				}
				h := now[len(now)-1].header
				for k, want := range map[string]string{"Mcp-Method": "tools/call", "Mcp-Protocol-Version": modern, "Mcp-Name": u.tool} {
					if got := h.Values(k); len(got) != 1 || got[0] != want {
						t.Errorf("%s received %s %q; the gateway judged %q", up, k, got, want)
					}
				}
				for k, v := range h {
					if strings.HasPrefix(k, "Mcp-Param-") {
						t.Errorf("%s received %s: %q, which the judged arguments {action: read, path: headers.txt} do not back (the tool mirrors no argument into a header)", up, k, v)
					}
				}
			})
		}
	}
}
