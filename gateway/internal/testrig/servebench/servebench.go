// Package servebench measures the gateway as a user runs it: the
// `preflight serve` binary, built as a user builds it, with a
// configuration that names only its server (so every default is on: the
// audit log in SQLite, metrics, pins, redaction, a log record per call),
// in front of a real upstream over loopback, against the same calls made
// directly to that upstream, in one interleaved run. A peer proxy can be
// measured in the same rounds.
//
// The benchmark is BenchmarkServe (docs/benchmarks.md, "As shipped").
package servebench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/endpoint"
)

// Bounds, not synchronisation: how long a build, a start or a stop may take.
const (
	buildTimeout = 5 * time.Minute
	startTimeout = time.Minute
	stopTimeout  = 30 * time.Second
)

// Upstream kinds: Dual serves both protocol eras on one URL
// (endpoint.NewHandler), Legacy only 2025-11-25 (the SDK's stateful
// handler).
const (
	Dual   = "dual"
	Legacy = "legacy"
)

// Tools of the upstream: ReadTool is declared read-only, WriteTool a
// write that is neither read-only nor destructive (allowed by the
// gateway's default decisions, audited in full).
const (
	ReadTool  = "read"
	WriteTool = "write"
)

// NewUpstream is the upstream's server: two tools that do nothing, so that a
// call measures the protocol and the path, not the tool.
func NewUpstream() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "servebench", Version: "1"}, nil)
	f := false
	schema := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)
	ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	}
	s.AddTool(&mcp.Tool{Name: ReadTool, InputSchema: schema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &f}}, ok)
	s.AddTool(&mcp.Tool{Name: WriteTool, InputSchema: schema,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &f, OpenWorldHint: &f}}, ok)
	return s
}

// ServeUpstream serves the upstream of kind at addr until ctx is done.
func ServeUpstream(ctx context.Context, kind, addr string) error {
	s := NewUpstream()
	var h http.Handler
	switch kind {
	case Dual:
		h = endpoint.NewHandler(s, nil)
	case Legacy:
		h = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	default:
		return fmt.Errorf("upstream kind %q", kind)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return endpoint.Serve(ctx, ln, h)
}

// Build builds the command at pkg (relative to the gateway module, as
// "./cmd/preflight") into dir and returns its path.
func Build(dir, pkg, name string) (string, error) {
	root, err := gatewayRoot()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	out := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return out, nil
}

// gatewayRoot is the gateway module's directory, above the working one.
func gatewayRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/preflightmcp/preflight/gateway\n") {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no gateway module above %s", dir)
		}
	}
}

// Process is a started program whose output goes to a log file.
type Process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	Log    string
}

// Start starts bin with args and env (added to this process's), output to
// log, in a process group of its own that dies with this process.
func Start(bin string, args, env []string, log string) (*Process, error) {
	out, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, err
	}
	p := &Process{cmd: cmd, exited: make(chan struct{}), Log: log}
	go func() {
		_ = cmd.Wait()
		out.Close()
		close(p.exited)
	}()
	return p, nil
}

// Pid is the process's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Stop ends the process group with SIGTERM and waits, killing it after
// stopTimeout.
func (p *Process) Stop() {
	_ = syscall.Kill(-p.Pid(), syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(stopTimeout):
		_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
		<-p.exited
	}
}

// WaitHTTP polls url until it answers 200 with want in its body, the
// process exits, or startTimeout passes.
func (p *Process) WaitHTTP(url, want string) error {
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return fmt.Errorf("exited:\n%s", tail(p.Log))
		default:
		}
		if resp, err := client.Get(url); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(string(body), want) {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer within %v:\n%s", url, startTimeout, tail(p.Log))
}

// tail is the end of a log, for an error's message.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Usage is a process's CPU time and memory from /proc.
type Usage struct {
	CPU     time.Duration // user and system time so far
	RSS     int64         // resident set, bytes (VmRSS)
	PeakRSS int64         // the most it was, bytes (VmHWM)
}

// clockTick is the unit of /proc/PID/stat's times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// ReadUsage reads pid's usage from /proc.
func ReadUsage(pid int) (Usage, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Usage{}, err
	}
	cpu, err := parseStat(string(stat))
	if err != nil {
		return Usage{}, err
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Usage{}, err
	}
	return Usage{CPU: cpu, RSS: statusBytes(string(status), "VmRSS:"), PeakRSS: statusBytes(string(status), "VmHWM:")}, nil
}

// parseStat returns utime+stime of a /proc/PID/stat line. The command
// name, in parentheses, may hold spaces, so fields count from its end.
func parseStat(s string) (time.Duration, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("stat: no command name")
	}
	f := strings.Fields(s[i+1:])
	// After the name: state(3) ... utime(14) stime(15), 1-based.
	if len(f) < 13 {
		return 0, errors.New("stat: short line")
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}

// statusBytes reads a "Key:  N kB" line of /proc/PID/status.
func statusBytes(status, key string) int64 {
	for line := range strings.Lines(status) {
		if rest, ok := strings.CutPrefix(line, key); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n * 1024
			}
		}
	}
	return 0
}

// Leg is one way of making the call: directly, through the gateway, or
// through a peer.
type Leg struct {
	Name     string
	URL      string
	Pid      int // the proxy's process, whose CPU is counted; 0 for none
	sessions []*mcp.ClientSession
	http     *http.Client
}

// Connect opens clients sessions of era to the leg.
func (l *Leg) Connect(ctx context.Context, era string, clients int) error {
	l.http = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * clients}}
	for range clients {
		c := mcp.NewClient(&mcp.Implementation{Name: "servebench", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: l.URL, HTTPClient: l.http, DisableStandaloneSSE: true},
			&mcp.ClientSessionOptions{ProtocolVersion: era})
		if err != nil {
			l.Close()
			return fmt.Errorf("%s: %w", l.Name, err)
		}
		l.sessions = append(l.sessions, cs)
	}
	return nil
}

// Close ends the leg's sessions and connections.
func (l *Leg) Close() {
	for _, cs := range l.sessions {
		cs.Close()
	}
	l.sessions = nil
	if l.http != nil {
		l.http.CloseIdleConnections()
	}
}

// call makes one call of tool, with a params value of its own (the SDK's
// client writes the request's _meta into the params it is given).
func call(ctx context.Context, cs *mcp.ClientSession, tool string) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"n": 1}})
	if err == nil && res.IsError {
		err = fmt.Errorf("tool error: %v", res.Content)
	}
	return err
}

// Warm makes calls calls of tool on each of the leg's sessions.
func (l *Leg) Warm(ctx context.Context, tool string, calls int) error {
	for _, cs := range l.sessions {
		for range calls {
			if err := call(ctx, cs, tool); err != nil {
				return fmt.Errorf("%s: %w", l.Name, err)
			}
		}
	}
	return nil
}

// phase runs every session of the leg in a loop for d and returns the
// latencies and the time it took.
func (l *Leg) phase(ctx context.Context, tool string, d time.Duration) ([]time.Duration, time.Duration, error) {
	var (
		mu   sync.Mutex
		lat  []time.Duration
		errs []error
		wg   sync.WaitGroup
	)
	start := time.Now()
	end := start.Add(d)
	for _, cs := range l.sessions {
		wg.Go(func() {
			var local []time.Duration
			var err error
			for time.Now().Before(end) {
				t0 := time.Now()
				if err = call(ctx, cs, tool); err != nil {
					break
				}
				local = append(local, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, local...)
			if err != nil {
				errs = append(errs, err)
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, 0, fmt.Errorf("%s: %w", l.Name, err)
	}
	return lat, time.Since(start), nil
}

// LegResult is what one leg measured over a run.
type LegResult struct {
	Name          string
	Calls         int
	P50, P90, P99 time.Duration
	// AddedP50 is the median over rounds of this leg's median minus the
	// first leg's in the same round.
	AddedP50 time.Duration
	// Throughput is calls per second over the time the leg ran, and
	// ThroughputRatio its ratio to the first leg's.
	Throughput, ThroughputRatio float64
	// CPUPerCall is the proxy process's CPU time over the whole run
	// (both legs' phases, so background work counts) per call of this
	// leg; zero for a leg without a process.
	CPUPerCall time.Duration
}

// Run measures tool on legs (the first is the reference, the direct call)
// in rounds: each round runs every leg for round, in an order that rotates
// from round to round, so that the machine's load falls on all of them
// alike.
func Run(ctx context.Context, legs []*Leg, tool string, rounds int, round time.Duration) ([]LegResult, error) {
	type acc struct {
		lat  []time.Duration
		p50s []time.Duration
		wall time.Duration
		cpu0 time.Duration
	}
	accs := make([]acc, len(legs))
	for i, l := range legs {
		if l.Pid != 0 {
			u, err := ReadUsage(l.Pid)
			if err != nil {
				return nil, err
			}
			accs[i].cpu0 = u.CPU
		}
	}
	for r := range rounds {
		for k := range legs {
			i := (k + r) % len(legs)
			lat, wall, err := legs[i].phase(ctx, tool, round)
			if err != nil {
				return nil, err
			}
			accs[i].lat = append(accs[i].lat, lat...)
			accs[i].p50s = append(accs[i].p50s, Quantile(lat, 0.5))
			accs[i].wall += wall
		}
	}
	out := make([]LegResult, len(legs))
	for i, l := range legs {
		a := &accs[i]
		res := LegResult{Name: l.Name, Calls: len(a.lat),
			P50: Quantile(a.lat, 0.5), P90: Quantile(a.lat, 0.9), P99: Quantile(a.lat, 0.99),
			Throughput: float64(len(a.lat)) / a.wall.Seconds()}
		added := make([]time.Duration, rounds)
		for r := range rounds {
			added[r] = a.p50s[r] - accs[0].p50s[r]
		}
		res.AddedP50 = Quantile(added, 0.5)
		res.ThroughputRatio = res.Throughput / out[0].Throughput
		if i == 0 {
			res.ThroughputRatio = 1
		}
		if l.Pid != 0 && res.Calls > 0 {
			u, err := ReadUsage(l.Pid)
			if err != nil {
				return nil, err
			}
			res.CPUPerCall = (u.CPU - a.cpu0) / time.Duration(res.Calls)
		}
		out[i] = res
	}
	return out, nil
}

// Quantile is the q-quantile of d (nearest rank, lower), sorting d.
func Quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[int(q*float64(len(d)-1))]
}
