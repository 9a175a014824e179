package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway"
)

// streamerEnv makes the test binary (see runChildServer) run a stdio
// server whose tool streams forever.
const streamerEnv = "PREFLIGHT_GATEWAY_TEST_STREAMER"

// closeBound is how long a test lets Close take before calling it hung:
// far beyond its deadline, so that only a hang fails.
const closeBound = 20 * time.Second

// streamForever sends progress for req until stop is closed, whatever
// the gateway says: cancellation, a closed connection.
func streamForever(req *mcp.CallToolRequest, stop <-chan struct{}) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-time.After(time.Millisecond):
		}
		_ = req.Session.NotifyProgress(context.Background(), &mcp.ProgressNotificationParams{
			ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Message: "still going"})
	}
}

// streamer is a server whose tool "stream" never returns and sends
// progress until stop is closed; started is closed at its first call.
func streamer(started chan<- struct{}, stop <-chan struct{}) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "streamer", Version: "1"}, nil)
	var once sync.Once
	s.AddTool(&mcp.Tool{Name: "stream", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			once.Do(func() { close(started) })
			streamForever(req, stop)
			return &mcp.CallToolResult{}, nil
		})
	return s
}

// runStreamer serves streamer over stdio until the process is killed.
func runStreamer() int {
	started, stop := make(chan struct{}), make(chan struct{})
	s := streamer(started, stop)
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		return 1
	}
	return 0
}

// TestCloseWhileUpstreamStreams: Close returns, and leaves no goroutine
// behind (goleak in TestMain), while an upstream streams progress for a
// call in flight and never answers it; over stdio, HTTP and in memory,
// for clients of both eras. Serve gives the call its grace first.
func TestCloseWhileUpstreamStreams(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	upstreams := map[string]func(t *testing.T, started chan struct{}, stop chan struct{}) gateway.UpstreamSpec{
		"stdio": func(t *testing.T, started, _ chan struct{}) gateway.UpstreamSpec {
			close(started) // seen by the client's progress instead
			return gateway.UpstreamSpec{Name: "up", Command: exe, Args: []string{"-test.run=^$"},
				Env: map[string]string{childEnv: "1", streamerEnv: "1"}, Dir: t.TempDir()}
		},
		"http": func(t *testing.T, started, stop chan struct{}) gateway.UpstreamSpec {
			return gateway.UpstreamSpec{Name: "up", URL: serveEra(t, streamer(started, stop), legacy)}
		},
		"memory": func(t *testing.T, started, stop chan struct{}) gateway.UpstreamSpec {
			return gateway.UpstreamSpec{Name: "up", Connect: inMemory(streamer(started, stop))}
		},
	}
	for name, spec := range upstreams {
		for _, era := range []string{modern, legacy} {
			t.Run(name+"/"+era, func(t *testing.T) {
				started, stop := make(chan struct{}), make(chan struct{})
				up := spec(t, started, stop)
				// Cleanups run last first: the gateway closes, then the
				// tool stops streaming, then the upstream's server stops.
				t.Cleanup(func() { close(stop) })
				closeWhileStreaming(t, up, era, started)
			})
		}
	}
}

// closeWhileStreaming serves a gateway in front of up, calls "stream" as
// a client of era, and stops the gateway while the call streams.
func closeWhileStreaming(t *testing.T, up gateway.UpstreamSpec, era string, started <-chan struct{}) {
	g, err := gateway.New(&gateway.Options{Upstreams: []gateway.UpstreamSpec{up}, ShutdownGrace: 500 * time.Millisecond, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	closed := false
	t.Cleanup(func() {
		if !closed {
			g.Close()
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stopServing := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- g.Serve(ctx, ln) }()
	wctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	if err := g.WaitReady(wctx); err != nil {
		t.Fatal(err)
	}

	progressed := make(chan struct{})
	var once sync.Once
	cs := connect(t, "http://"+ln.Addr().String()+gateway.MCPPath, era, nil, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { once.Do(func() { close(progressed) }) }})
	called := make(chan error, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "stream", Arguments: map[string]any{}}
		params.SetProgressToken("p")
		_, err := cs.CallTool(context.Background(), params)
		called <- err
	}()
	for _, ch := range []<-chan struct{}{started, progressed} {
		select {
		case <-ch:
		case <-time.After(readyTimeout):
			t.Fatal("the call did not start streaming")
		}
	}

	stopServing()
	<-served // within the grace; the call is cut
	done := make(chan error, 1)
	go func() { done <- g.Close() }()
	select {
	case <-done:
		closed = true
	case <-time.After(closeBound):
		t.Fatalf("Close still blocked %v after Serve returned, with an upstream streaming for a call in flight", closeBound)
	}
	<-called
}

// TestCloseAbandonsWhatHangs: a store that never finishes closing holds
// Close no longer than CloseTimeout; the log names what was abandoned.
func TestCloseAbandonsWhatHangs(t *testing.T) {
	t.Parallel()
	stuck := make(chan struct{})
	t.Cleanup(func() { close(stuck) }) // lets the abandoned goroutine end before goleak looks
	var logged lockedLog
	g, err := gateway.New(&gateway.Options{
		Upstreams:    []gateway.UpstreamSpec{{Name: "files", URL: filesServer(t)}},
		CloseTimeout: 200 * time.Millisecond,
		Closers:      []func() error{func() error { <-stuck; return nil }},
		Logger:       slog.New(slog.NewJSONHandler(&logged, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	done := make(chan error, 1)
	go func() { done <- g.Close() }()
	select {
	case <-done:
	case <-time.After(closeBound):
		t.Fatalf("Close still blocked %v on a store that does not close, with CloseTimeout 200ms", closeBound)
	}
	if !strings.Contains(logged.String(), "abandoned") || !strings.Contains(logged.String(), "a store") {
		t.Errorf("the log does not say what was abandoned:\n%s", logged.String())
	}
}

// lockedLog is a log destination safe for concurrent writes.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServeExitsOnSignalWhileUpstreamStreams: the shipped binary, serving
// an upstream (over stdio, over HTTP) whose tool streams progress forever
// for a client's call in flight (of either era; the legacy client also
// keeps its GET event stream open), exits after SIGTERM within its
// shutdown grace and close timeout.
func TestServeExitsOnSignalWhileUpstreamStreams(t *testing.T) {
	bin := t.TempDir()
	for _, pkg := range []string{"./cmd/preflight", "./internal/testrig/streamer"} {
		out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	// The default grace (30 s) and close timeout (15 s), and room for a
	// slow machine: only a hang takes longer.
	bound := gateway.DefaultShutdownGrace + gateway.DefaultCloseTimeout + 30*time.Second
	for _, transport := range []string{"stdio", "http"} {
		for _, era := range []string{modern, legacy} {
			t.Run(transport+"/"+era, func(t *testing.T) {
				t.Parallel()
				server := "    command: " + filepath.Join(bin, "streamer") + "\n"
				if transport == "http" {
					server = "    url: " + startProcess(t, filepath.Join(bin, "streamer"), []string{"-http", "127.0.0.1:0"}, `(http://\S+/mcp)`).url + "\n"
				}
				dir := t.TempDir()
				cfg := filepath.Join(dir, "preflight.yaml")
				if err := os.WriteFile(cfg, []byte("servers:\n  up:\n"+server), 0o600); err != nil {
					t.Fatal(err)
				}
				p := startProcess(t, filepath.Join(bin, "preflight"), []string{"serve", "-config", cfg, "-http", "127.0.0.1:0"}, `serving MCP at (http://\S+/mcp)`)

				progressed := make(chan struct{})
				var once sync.Once
				cs := connect(t, p.url, era, nil, &mcp.ClientOptions{
					ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { once.Do(func() { close(progressed) }) }})
				called := make(chan error, 1)
				go func() {
					params := &mcp.CallToolParams{Name: "stream", Arguments: map[string]any{}}
					params.SetProgressToken("p")
					_, err := cs.CallTool(context.Background(), params)
					called <- err
				}()
				select {
				case <-progressed:
				case <-time.After(readyTimeout):
					t.Fatal("the call did not start streaming")
				}
				start := time.Now()
				if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				select {
				case <-p.exited:
					t.Logf("exited %v after SIGTERM", time.Since(start).Round(100*time.Millisecond))
				case <-time.After(bound):
					t.Fatalf("preflight serve still running %v after SIGTERM, with an upstream streaming for a call in flight\n%s", bound, p.stderr.String())
				}
				<-called
			})
		}
	}
}

// process is a command a test started.
type process struct {
	cmd    *exec.Cmd
	url    string        // what its output printed
	exited chan struct{} // closed when it has exited
	stderr *lockedLog
}

// startProcess starts bin with args, killed when the test ends, and waits
// until its standard output prints a line matching printed, whose first
// group is the process's URL.
func startProcess(t *testing.T, bin string, args []string, printed string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, args...), exited: make(chan struct{}), stderr: &lockedLog{}}
	p.cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	p.cmd.Stderr = p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(printed)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
				break
			}
		}
		_, _ = io.Copy(io.Discard, out)
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	select {
	case p.url = <-urls:
	case <-p.exited:
		t.Fatalf("%s exited before it printed its URL\n%s", bin, p.stderr.String())
	case <-time.After(readyTimeout):
		t.Fatalf("%s printed no URL within %v\n%s", bin, readyTimeout, p.stderr.String())
	}
	return p
}
