package servebench_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/preflightmcp/preflight/gateway/internal/testrig/jaegertest"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/servebench"
	"github.com/preflightmcp/preflight/internal/freeport"
)

// The run of docs/benchmarks.md, "As shipped":
//
//	cd gateway && go test -run '^$' -bench Serve -benchtime 1x -count 3 ./internal/testrig/servebench \
//	    -args -clients 1,8 -duration 5s
var (
	clientsFlag = flag.String("clients", "1,8", "comma-separated numbers of concurrent clients per leg")
	duration    = flag.Duration("duration", 5*time.Second, "time each leg of a path runs, over all its rounds")
	roundFlag   = flag.Duration("round", 250*time.Millisecond, "time a leg runs in one round")
	profile     = flag.String("profile", "", "serve the gateways with -pprof, write each one's CPU profile over each path at the most clients to `DIR`, and print its top 15 functions by cumulative and by own share")
	traced      = flag.Bool("tracing", false, "also measure, as leg traced, a gateway with tracing on that exports every call's spans to a real Jaeger (jaegertest)")
)

// peerEnv names the binary of TBXark/mcp-proxy, measured beside the gateway
// on the paths its protocol version serves.
const peerEnv = "PREFLIGHT_BENCH_PEER"

// upstreamEnv makes this test binary the upstream: "KIND ADDR".
const upstreamEnv = "PREFLIGHT_SERVEBENCH_UPSTREAM"

func TestMain(m *testing.M) {
	if v := os.Getenv(upstreamEnv); v != "" {
		kind, addr, _ := strings.Cut(v, " ")
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		err := servebench.ServeUpstream(ctx, kind, addr)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "upstream:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	buildDir  string
	buildBin  string
	buildErr  error
)

// preflightBin builds the command once per test binary, as a user builds it.
func preflightBin(b *testing.B) string {
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "preflight-servebench-")
		if buildErr == nil {
			buildBin, buildErr = servebench.Build(buildDir, "./cmd/preflight", "preflight")
		}
	})
	if buildErr != nil {
		b.Fatal(buildErr)
	}
	return buildBin
}

// start starts a process for b, stopped when b ends.
func start(b *testing.B, dir, name, bin string, args, env []string) *servebench.Process {
	p, err := servebench.Start(bin, args, env, filepath.Join(dir, name+".log"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Stop)
	return p
}

// addr is a free loopback address.
func addr(b *testing.B) string {
	port, err := freeport.Get()
	if err != nil {
		b.Fatal(err)
	}
	return "127.0.0.1:" + strconv.Itoa(port)
}

// upstream starts this binary as an upstream of kind and returns its URL.
func upstream(b *testing.B, dir, kind string) string {
	a := addr(b)
	p := start(b, dir, "upstream-"+kind, os.Args[0], []string{"-test.run", "^$"}, []string{upstreamEnv + "=" + kind + " " + a})
	url := "http://" + a + "/mcp"
	// The upstream answers GET without a session with 400 or 405: poll
	// until it answers at all.
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			http.DefaultClient.CloseIdleConnections()
			return url
		}
		if time.Now().After(deadline) {
			b.Fatalf("upstream %s: %v\n%s", kind, err, p.Log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// gateway is a running preflight serve.
type gateway struct {
	url, pprof string
	p          *servebench.Process
}

// startGateway starts preflight serve in front of upstream with a
// configuration that names only the server, so that every default is on,
// and then the sections of extra; its state (audit log, pins, approvals)
// goes to a directory of its own.
func startGateway(b *testing.B, bin, dir, name, upstream, extra string) gateway {
	home := filepath.Join(dir, name)
	if err := os.MkdirAll(home, 0o755); err != nil {
		b.Fatal(err)
	}
	cfg := filepath.Join(home, "preflight.yaml")
	if err := os.WriteFile(cfg, []byte("servers:\n  up:\n    url: "+upstream+"\n"+extra), 0o644); err != nil {
		b.Fatal(err)
	}
	a := addr(b)
	args := []string{"serve", "-config", cfg, "-http", a}
	g := gateway{url: "http://" + a + "/mcp"}
	if *profile != "" {
		g.pprof = addr(b)
		args = append(args, "-pprof", g.pprof)
	}
	env := []string{"HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "state"), "XDG_CACHE_HOME=" + filepath.Join(home, "cache"), "XDG_CONFIG_HOME=" + filepath.Join(home, "config")}
	g.p = start(b, dir, name, bin, args, env)
	if err := g.p.WaitHTTP("http://"+a+"/healthz", `"status": "ok"`); err != nil {
		b.Fatal(err)
	}
	return g
}

// peer starts TBXark/mcp-proxy in front of the upstreams (by name) and
// returns its process and each upstream's URL through it.
func peer(b *testing.B, bin, dir string, upstreams map[string]string) (*servebench.Process, map[string]string) {
	a := addr(b)
	servers := map[string]any{}
	urls := map[string]string{}
	for name, u := range upstreams {
		servers[name] = map[string]any{"url": u, "transportType": "streamable-http"}
		urls[name] = "http://" + a + "/" + name + "/"
	}
	cfg, err := json.Marshal(map[string]any{
		"mcpProxy": map[string]any{"baseURL": "http://" + a, "addr": a, "name": "peer", "version": "1", "type": "streamable-http",
			"options": map[string]any{"logEnabled": true}},
		"mcpServers": servers,
	})
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "peer.json")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		b.Fatal(err)
	}
	p := start(b, dir, "peer", bin, []string{"-config", path}, nil)
	// It serves once every upstream is connected; wait for its last log line.
	deadline := time.Now().Add(time.Minute)
	for n := 0; n < len(upstreams); {
		log, _ := os.ReadFile(p.Log)
		if n = strings.Count(string(log), "Handling requests at"); n < len(upstreams) {
			if time.Now().After(deadline) {
				b.Fatalf("peer did not start:\n%s", log)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return p, urls
}

// path is what one sub-benchmark measures.
type path struct {
	name, era, tool string
	legs            []*servebench.Leg
}

// BenchmarkServe measures the shipped gateway against direct calls, in
// one interleaved run per path and number of clients (see the package
// doc). Paths: 2026-07-28 on both legs (a client of the dual-era
// upstream); 2025-11-25 on both legs, a read-only tool and a write
// (a legacy-only upstream); and a 2025-11-25 client of the dual-era
// upstream, which the gateway reaches in 2026-07-28. Metrics per leg:
// p50/p90/p99 latency, the added median (the leg's median minus the
// direct one's in the same round, median over rounds), the throughput as
// a fraction of the direct one's, and the proxy's CPU per call; once, the
// gateways' resident memory after start and a warm-up (idle) and at the
// end (peak). Each sub-benchmark runs once whatever b.N; -count repeats
// each one on the same processes.
func BenchmarkServe(b *testing.B) {
	var clients []int
	for s := range strings.SplitSeq(*clientsFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			b.Fatalf("-clients %q", *clientsFlag)
		}
		clients = append(clients, n)
	}
	rounds := max(1, int(*duration / *roundFlag))
	ctx := context.Background()
	bin := preflightBin(b)
	dir := b.TempDir()
	dual, legacy := upstream(b, dir, servebench.Dual), upstream(b, dir, servebench.Legacy)
	gwDual, gwLegacy := startGateway(b, bin, dir, "gateway-dual", dual, ""), startGateway(b, bin, dir, "gateway-legacy", legacy, "")
	var jaeger *jaegertest.Jaeger
	var tracedDual, tracedLegacy gateway
	if *traced {
		jaeger = jaegertest.Start(b)
		export := "tracing:\n  enabled: true\n  endpoint: " + jaeger.OTLP + "\n"
		tracedDual = startGateway(b, bin, dir, "traced-dual", dual, export)
		tracedLegacy = startGateway(b, bin, dir, "traced-legacy", legacy, export)
	}

	var peerPid int
	var peerURL map[string]string
	if bin := os.Getenv(peerEnv); bin != "" {
		p, urls := peer(b, bin, dir, map[string]string{"dual": dual, "legacy": legacy})
		peerPid, peerURL = p.Pid(), urls
	}
	paths := func() []path {
		leg := func(name, url string, pid int) *servebench.Leg {
			return &servebench.Leg{Name: name, URL: url, Pid: pid}
		}
		// legs are direct, the gateway, then the traced gateway and the
		// peer when they run.
		legs := func(upstream string) []*servebench.Leg {
			direct, gw, tr := dual, gwDual, tracedDual
			if upstream == "legacy" {
				direct, gw, tr = legacy, gwLegacy, tracedLegacy
			}
			l := []*servebench.Leg{leg("direct", direct, 0), leg("gateway", gw.url, gw.p.Pid())}
			if tr.p != nil {
				l = append(l, leg("traced", tr.url, tr.p.Pid()))
			}
			return l
		}
		withPeer := func(legs []*servebench.Leg, upstream string) []*servebench.Leg {
			if peerURL == nil {
				return legs
			}
			return append(legs, leg("peer", peerURL[upstream], peerPid))
		}
		return []path{
			{name: "era=2026-07-28", era: "2026-07-28", tool: servebench.ReadTool, legs: legs("dual")},
			{name: "era=2025-11-25/tool=read", era: "2025-11-25", tool: servebench.ReadTool, legs: withPeer(legs("legacy"), "legacy")},
			{name: "era=2025-11-25/tool=write", era: "2025-11-25", tool: servebench.WriteTool, legs: withPeer(legs("legacy"), "legacy")},
			{name: "era=2025-11-25/upstream=dual", era: "2025-11-25", tool: servebench.ReadTool, legs: withPeer(legs("dual"), "dual")},
		}
	}

	// Idle memory: after start and a warm-up of every path.
	for _, p := range paths() {
		for _, l := range p.legs {
			if err := l.Connect(ctx, p.era, 1); err != nil {
				b.Fatal(err)
			}
			err := l.Warm(ctx, p.tool, 200)
			l.Close()
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	type proxy struct {
		name string
		pid  int
	}
	proxies := []proxy{{"gateway-dual", gwDual.p.Pid()}, {"gateway-legacy", gwLegacy.p.Pid()}}
	if *traced {
		proxies = append(proxies, proxy{"traced-dual", tracedDual.p.Pid()}, proxy{"traced-legacy", tracedLegacy.p.Pid()})
	}
	if peerPid != 0 {
		proxies = append(proxies, proxy{"peer", peerPid})
	}
	b.Run("idle", func(b *testing.B) {
		for _, g := range proxies {
			u, err := servebench.ReadUsage(g.pid)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(u.RSS)/(1<<20), g.name+"-rss-MB")
		}
		b.ReportMetric(loadAverage(b), "loadavg")
		b.ReportMetric(0, "ns/op")
	})

	for _, n := range clients {
		for _, p := range paths() {
			b.Run(fmt.Sprintf("%s/clients=%d", p.name, n), func(b *testing.B) {
				for _, l := range p.legs {
					if err := l.Connect(ctx, p.era, n); err != nil {
						b.Fatal(err)
					}
					defer l.Close()
					if err := l.Warm(ctx, p.tool, 20); err != nil {
						b.Fatal(err)
					}
				}
				var prof func() string
				if *profile != "" && n == clients[len(clients)-1] {
					g := gwLegacy
					if p.legs[0].URL == dual {
						g = gwDual
					}
					file := filepath.Join(*profile, strings.NewReplacer("/", "_", "=", "-").Replace(fmt.Sprintf("%s_clients-%d.pprof", p.name, n)))
					prof = cpuProfile(b, bin, g.pprof, file, time.Duration(rounds)*(*roundFlag)*time.Duration(len(p.legs)))
				}
				res, err := servebench.Run(ctx, p.legs, p.tool, rounds, *roundFlag)
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range res {
					us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
					b.ReportMetric(us(r.P50), r.Name+"-p50-µs")
					b.ReportMetric(us(r.P90), r.Name+"-p90-µs")
					b.ReportMetric(us(r.P99), r.Name+"-p99-µs")
					b.ReportMetric(r.Throughput, r.Name+"-calls/s")
					if r.Name == "direct" {
						continue
					}
					b.ReportMetric(us(r.AddedP50), r.Name+"-added-p50-µs")
					b.ReportMetric(r.ThroughputRatio, r.Name+"-throughput-ratio")
					b.ReportMetric(us(r.CPUPerCall), r.Name+"-cpu-µs/call")
				}
				b.ReportMetric(loadAverage(b), "loadavg")
				b.ReportMetric(0, "ns/op")
				if prof != nil {
					b.Logf("gateway CPU profile, %s, %d clients:\n%s", p.name, n, prof())
				}
			})
		}
	}
	b.Run("end", func(b *testing.B) {
		if jaeger != nil {
			// The traced gateways' spans reached Jaeger: the legs measured
			// an export, not a tracer that dropped everything.
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			if _, err := jaeger.Search(ctx, "preflight", "tools/call"); err != nil {
				b.Fatalf("the traced gateways' calls are not in Jaeger: %v", err)
			}
		}
		for _, g := range proxies {
			u, err := servebench.ReadUsage(g.pid)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(u.PeakRSS)/(1<<20), g.name+"-peak-rss-MB")
		}
		b.ReportMetric(0, "ns/op")
	})
}

// cpuProfile starts taking the gateway's CPU profile for d into out; the
// function it returns waits for it and returns pprof's top 15 functions by
// cumulative share, then by their own.
func cpuProfile(b *testing.B, bin, addr, out string, d time.Duration) func() string {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, max(1, int(d.Seconds()))))
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			defer http.DefaultClient.CloseIdleConnections()
			f, err := os.Create(out)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, resp.Body)
			return errors.Join(err, f.Close())
		}()
	}()
	return func() string {
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		var text strings.Builder
		for _, order := range []string{"-cum", "-flat"} {
			top, err := exec.Command("go", "tool", "pprof", "-top", order, "-nodecount", "15", bin, out).CombinedOutput()
			if err != nil {
				b.Fatalf("pprof: %v\n%s", err, top)
			}
			text.Write(top)
		}
		return out + "\n" + text.String()
	}
}

// loadAverage is the machine's load average over the last minute.
func loadAverage(b *testing.B) float64 {
	s, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		b.Fatal(err)
	}
	f, err := strconv.ParseFloat(strings.Fields(string(s))[0], 64)
	if err != nil {
		b.Fatal(err)
	}
	return f
}
