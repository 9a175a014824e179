package upstream

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(stdioServerEnv) != "" {
		serveStdio() // the test binary run as a stdio upstream
		return
	}
	goleak.VerifyTestMain(m)
}

func TestSpecCheck(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want string // "" means valid
	}{
		{Spec{Name: "a", Command: "node"}, ""},
		{Spec{Name: "a", URL: "https://example.com/mcp"}, ""},
		{Spec{Name: "a", URL: "http://127.0.0.1:1/sse", Transport: TransportSSE}, ""},
		{Spec{Command: "node"}, "without a name"},
		{Spec{Name: "a"}, "neither a command"},
		{Spec{Name: "a", Command: "x", URL: "http://h/mcp"}, "a command and a url"},
		{Spec{Name: "a", Transport: TransportHTTP}, "needs a url"},
		{Spec{Name: "a", URL: "ftp://h/x"}, "want an absolute http or https URL"},
		{Spec{Name: "a", URL: "/relative"}, "want an absolute http or https URL"},
		{Spec{Name: "a", Command: "x", Transport: "grpc"}, `unknown transport "grpc"`},
		{Spec{Name: "a", Command: "x", Era: "2024-01-01"}, `unknown era "2024-01-01"`},
	} {
		err := tc.spec.Check()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.spec, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: error %v, want %q", tc.spec, err, tc.want)
		}
	}
}

func TestSpecDefaults(t *testing.T) {
	s := Spec{Name: "a", URL: "http://h/mcp", ProbeTimeout: time.Hour}.withDefaults()
	if s.Transport != TransportHTTP || s.ConnectTimeout != DefaultConnectTimeout || s.ProbeTimeout != DefaultConnectTimeout || s.Restart.Budget != DefaultRestartBudget {
		t.Errorf("defaults: %+v", s)
	}
}

// chunks feeds a tee its body in pieces of every size, as a network
// would.
func readAll(t *testing.T, r io.Reader) {
	t.Helper()
	buf := make([]byte, 3)
	for {
		if _, err := r.Read(buf); err != nil {
			return
		}
	}
}

func TestSSETee(t *testing.T) {
	stream := "event: message\r\nid: 1\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t\",\"progress\":1}}\r\n\r\n" +
		": comment\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"elicitation/create\",\"params\":{}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\n" +
		"data: \"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[],\"n\":1.50}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n"
	f := newFlow()
	s := &sink{}
	readAll(t, &sseTee{body: io.NopCloser(strings.NewReader(stream)), sink: s, flow: f})
	if got := string(s.result()); got != `{"content":[],"n":1.50}` {
		t.Errorf("captured %q", got)
	}
	if s.before != 2 {
		t.Errorf("%d flow notifications before the response, want 2", s.before)
	}
	if n := f.observed.Load(); n != 3 {
		t.Errorf("observed %d flow notifications, want 3", n)
	}
}

func TestJSONTee(t *testing.T) {
	s := &sink{}
	readAll(t, &jsonTee{body: io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"x","annotations":{"readOnlyHint":false}}]}}`)), sink: s})
	if got := string(s.result()); got != `{"tools":[{"name":"x","annotations":{"readOnlyHint":false}}]}` {
		t.Errorf("captured %q", got)
	}
	s = &sink{}
	readAll(t, &jsonTee{body: io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no"}}`)), sink: s})
	if s.result() != nil {
		t.Errorf("captured an error: %q", s.result())
	}
}

// FuzzSSETee feeds the tee arbitrary upstream bytes: it must not panic,
// and whatever it captures is the result of a JSON-RPC response it saw.
func FuzzSSETee(f *testing.F) {
	f.Add([]byte("data: {\"id\":1,\"result\":{}}\n\n"))
	f.Add([]byte("data: {\"method\":\"notifications/progress\"}\n\ndata: {\"id\":1,\"result\":[1,\n\n"))
	f.Add([]byte("data:\ndata:\n\n\n\n\r\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := &sink{}
		tee := &sseTee{body: io.NopCloser(bytes.NewReader(b)), sink: s, flow: newFlow()}
		readAll(t, tee)
		if r := s.result(); r != nil && !bytes.Contains(b, r) {
			t.Fatalf("captured %q, not in the stream", r)
		}
	})
}

func TestLineLogger(t *testing.T) {
	var buf bytes.Buffer
	l := &lineLogger{logger: slog.New(slog.NewTextHandler(&buf, nil)), max: 12}
	io.WriteString(l, "first line\nsec")
	io.WriteString(l, "ond\x1b[31m\r\n\n0123456789abcdef\nlast\n")
	out := buf.String()
	for _, want := range []string{`line="first line"`, "line=second\n", `line=0123456789ab truncated=true`, `line=last`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") || strings.Contains(out, "cdef") {
		t.Errorf("control characters or an overlong line got through:\n%q", out)
	}
}

// TestStderrTail: the tail keeps the last 3 lines, over restarts, at most
// 300 bytes in all, sanitised.
func TestStderrTail(t *testing.T) {
	var tail stderrTail
	first := &lineLogger{logger: slog.New(slog.DiscardHandler), max: DefaultMaxStderrLine, tail: &tail}
	io.WriteString(first, "starting\none\ntwo\nboom: \x1b[31mmissing API_KEY\n")
	if got := strings.Join(tail.get(), "|"); got != "one|two|boom: missing API_KEY" {
		t.Errorf("tail %q", got)
	}
	restarted := &lineLogger{logger: slog.New(slog.DiscardHandler), max: DefaultMaxStderrLine, tail: &tail}
	io.WriteString(restarted, "starting\n")
	if got := strings.Join(tail.get(), "|"); got != "two|boom: missing API_KEY|starting" {
		t.Errorf("tail after a restart %q", got)
	}
	io.WriteString(restarted, strings.Repeat("é", 200)+"\n"+strings.Repeat("x", 120)+"\n")
	if got := tail.get(); len(got) != 1 || got[0] != strings.Repeat("x", 120) {
		t.Errorf("within 300 bytes: %q", got)
	}
	io.WriteString(restarted, strings.Repeat("é", 200)+"\n")
	if got := tail.get(); len(got) != 1 || len(got[0]) != 299 || !strings.HasSuffix(got[0], "é…") {
		t.Errorf("a long line not clipped to 300 bytes on a rune boundary: %q", got)
	}
}

func TestFlowWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFlow()
		f.observe()
		f.observe()
		done := make(chan struct{})
		go func() {
			f.wait(context.Background(), 2)
			close(done)
		}()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("wait returned before the notifications were handled")
		default:
		}
		f.handle()
		f.handle()
		<-done
		// A notification that is never handled holds a call for at most
		// maxFlowWait.
		f.observe()
		start := time.Now()
		f.wait(context.Background(), 3)
		if d := time.Since(start); d != maxFlowWait {
			t.Errorf("waited %v, want %v", d, maxFlowWait)
		}
	})
}

func TestRestartBackoffAndBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := New(Spec{Name: "a", Command: "x", Restart: Restart{Initial: time.Second, Max: 4 * time.Second, Budget: 3, Window: time.Minute}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		d := c.spec.Restart.Initial
		var got []time.Duration
		for range 4 {
			got = append(got, c.nextDelay(&d))
		}
		if got[0] != time.Second || got[1] != 2*time.Second || got[2] != 4*time.Second {
			t.Errorf("back-off = %v, want 1s 2s 4s", got[:3])
		}
		// The budget of three restarts a minute is spent: the fourth waits
		// for the window to free one.
		if got[3] < 59*time.Second {
			t.Errorf("fourth delay %v, want the rest of the window", got[3])
		}
		time.Sleep(2 * time.Minute)
		if d := c.nextDelay(&d); d != 4*time.Second {
			t.Errorf("after the window, delay %v, want the capped back-off 4s", d)
		}
	})
}
