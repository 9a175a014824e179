// Package fleet runs the gateway as a fleet on loopback for tests and load
// runs: a real Redis and PostgreSQL, N `preflight serve` processes (built
// once per test binary) sharing one config, and HAProxy in front with
// deploy/local/haproxy.cfg, as shipped. [Start] returns the URLs and stops
// and removes everything when the test ends; [Main] removes the builds and
// checks that no goroutine outlived the tests.
//
// The config the replicas share fronts this repository's two example
// servers over stdio (every replica starts its own, over one data
// directory), keeps single-use confirmation nonces, approval
// notifications and disclosure grants in Redis, approvals, the audit log
// and pins in PostgreSQL, and seals 2026-07-28 clients' requestState with
// keys every replica has. The files server's deletes and replaces are
// confirmed in band (its hints), its appends by a person out of band
// (the rule appends-need-a-person), the results of reading secret* are
// confidential, so redacted; reads are audited in full, so that
// each call's arguments name it in the log.
// HAProxy names the replica that answered in X-Preflight-Replica.
package fleet

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/gobuild"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/pgtest"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/redistest"
	"github.com/preflightmcp/preflight/internal/freeport"
)

// Bounds, not synchronisation: how long a process may take to start or stop
// before the test fails.
const (
	startTimeout = time.Minute
	stopTimeout  = 30 * time.Second
	buildTimeout = 5 * time.Minute
)

// SecretText is the content of the files server's secret.txt, whose
// reads are redacted.
const SecretText = "write to alice@example.com\n"

// ReplicaHeader is the response header in which HAProxy names the replica
// that answered (r1, r2, ...).
const ReplicaHeader = "X-Preflight-Replica"

// Options configure a fleet; nil means the defaults.
type Options struct {
	// Replicas is the number of preflight serve processes behind HAProxy.
	// Zero means 2.
	Replicas int
	// Config is extra YAML appended to the shared config (more keys for
	// a test); it may use ${PREFLIGHT_REDIS_URL} and the like.
	Config string
	// Servers is extra YAML added to the config's servers map (entries
	// indented by two spaces); ${FLEET_BIN}/slow is the slow upstream
	// (package slow), ${FLEET_DATA} the data directory.
	Servers string
}

// Fleet is a running fleet.
type Fleet struct {
	// URL is the MCP endpoint through HAProxy.
	URL string
	// PageURL is the approval page through HAProxy, the replicas'
	// approvals.pageUrl.
	PageURL string
	// Replicas are the serve processes, r1 first.
	Replicas []*Replica
	// RedisURL and PostgresURL are the shared stores; Redis and Postgres
	// their servers, which a test may stop and restart.
	RedisURL, PostgresURL string
	Redis                 *redistest.Server
	Postgres              *pgtest.Server
	// Dir holds the config, the data directory and the logs.
	Dir string

	t       testing.TB
	env     []string
	config  string
	haproxy *process
}

// Replica is one preflight serve process.
type Replica struct {
	Name string
	// URL is its own MCP endpoint, bypassing HAProxy.
	URL  string
	Port string
	p    *process
}

// process is a started command.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	log    string
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// Main runs the tests, removes what they built and fails the run if any
// goroutine outlived them. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	redistest.Stop()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// build builds preflight and the example servers once per test binary.
func build() (string, error) {
	buildOnce.Do(func() {
		root, err := gobuild.Root()
		if err != nil {
			buildErr = err
			return
		}
		buildDir, err = os.MkdirTemp("", "preflight-fleet-bin-")
		if err != nil {
			buildErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
		defer cancel()
		for _, b := range []struct{ dir, pkg, out string }{
			{filepath.Join(root, "gateway"), "./cmd/preflight", "preflight"},
			{root, "./examples/files", "files"},
			{root, "./examples/folders", "folders"},
			{filepath.Join(root, "gateway"), "./internal/testrig/fleet/slow", "slow"},
		} {
			cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(buildDir, b.out), b.pkg)
			cmd.Dir = b.dir
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", b.pkg, err, out)
				return
			}
		}
	})
	return buildDir, buildErr
}

// haproxyBin returns Debian's haproxy, which is in /usr/sbin.
func haproxyBin() (string, error) {
	if p, err := exec.LookPath("haproxy"); err == nil {
		return p, nil
	}
	if fi, err := os.Stat("/usr/sbin/haproxy"); err == nil && fi.Mode()&0o111 != 0 {
		return "/usr/sbin/haproxy", nil
	}
	return "", errors.New("no haproxy: apt-get install -y haproxy")
}

// baseConfig is the config every replica reads.
const baseConfig = `servers:
${SERVERS}  files:
    command: ${FLEET_BIN}/files
    args: [-root, "${FLEET_DATA}/files"]
    rules:
      - name: secrets-are-confidential
        tool: manage_files
        when: args.action == "read" && args.path.startsWith("secret")
        annotations: {readOnlyHint: true, idempotentHint: true}
        hints: {effect: read, idempotent: true, requiresConfirmation: false, resultSensitivity: confidential}
  folders:
    command: ${FLEET_BIN}/folders
    args: [-root, "${FLEET_DATA}/folders"]
    disclose: true
disclosure:
  store: redis
redis:
  url: ${PREFLIGHT_REDIS_URL}
  prefix: "fleet:"
requestState:
  keysEnv: PREFLIGHT_REQUEST_STATE_KEYS
approvals:
  store: postgres
  url: ${PREFLIGHT_POSTGRES_URL}
  pageUrl: ${PREFLIGHT_PAGE_URL}
audit:
  store: postgres
  url: ${PREFLIGHT_POSTGRES_URL}
  levels: {read: full}
pins:
  store: postgres
  url: ${PREFLIGHT_POSTGRES_URL}
decisions:
  rules:
    - name: appends-need-a-person
      servers: [files]
      tools: [manage_files]
      when: args.action == "append"
      decision: confirm
      approval: human
`

// Start starts a fleet for t, stopped and removed when t ends. It fails t
// when a piece cannot start (Redis, PostgreSQL and HAProxy must be
// installed).
func Start(t testing.TB, o *Options) *Fleet {
	t.Helper()
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Replicas <= 0 {
		opts.Replicas = 2
	}
	bin, err := build()
	if err != nil {
		t.Fatal(err)
	}
	haproxy, err := haproxyBin()
	if err != nil {
		t.Fatal(err)
	}
	root, err := gobuild.Root()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, d := range []string{"data/files", "data/folders"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "data/files/notes.txt"), []byte("shared notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data/files/secret.txt"), []byte(SecretText), 0o644); err != nil {
		t.Fatal(err)
	}

	rs := redistest.Start(t, nil)
	pg := pgtest.Start(t)
	secret := make([]byte, 32)
	rand.Read(secret)
	f := &Fleet{
		t: t, Dir: dir, config: filepath.Join(dir, "gateway.yaml"),
		RedisURL: "redis://" + rs.Addr() + "/0", PostgresURL: pg.DSN(),
		Redis: rs, Postgres: pg,
	}
	// HAProxy's port is chosen first: the replicas' config names the page
	// at it (approvals.pageUrl), as an operator's names the load balancer.
	lbPort := freeport.Arg(t)
	f.PageURL = "http://127.0.0.1:" + lbPort + "/ui"
	f.env = append(os.Environ(),
		"PREFLIGHT_PAGE_URL="+f.PageURL,
		"FLEET_BIN="+bin, "FLEET_DATA="+filepath.Join(dir, "data"),
		"PREFLIGHT_REDIS_URL="+f.RedisURL, "PREFLIGHT_POSTGRES_URL="+f.PostgresURL,
		"PREFLIGHT_REQUEST_STATE_KEYS=k1:"+base64.StdEncoding.EncodeToString(secret),
		// The replicas' own state (login keys, page addresses) stays in
		// the fleet's directory.
		"XDG_STATE_HOME="+filepath.Join(dir, "state"), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
	if err := os.WriteFile(f.config, []byte(strings.Replace(baseConfig, "${SERVERS}", opts.Servers, 1)+opts.Config), 0o644); err != nil {
		t.Fatal(err)
	}
	for range opts.Replicas {
		f.AddReplica()
	}

	// HAProxy with deploy/local/haproxy.cfg and a server line per replica,
	// as deploy/local/run writes it.
	shipped, err := os.ReadFile(filepath.Join(root, "deploy", "local", "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg strings.Builder
	for _, line := range strings.SplitAfter(string(shipped), "\n") {
		if !strings.HasPrefix(line, "    server r") {
			cfg.WriteString(line)
		}
	}
	env := slicesClone(f.env)
	for i, r := range f.Replicas {
		fmt.Fprintf(&cfg, "    server r%d \"127.0.0.1:${PREFLIGHT_REPLICA_%d_PORT}\"\n", i+1, i+1)
		env = append(env, fmt.Sprintf("PREFLIGHT_REPLICA_%d_PORT=%s", i+1, r.Port))
	}
	lbCfg := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(lbCfg, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	p := f.start("haproxy", haproxy, []string{"-db", "-f", lbCfg}, append(env, "PREFLIGHT_LB_PORT="+lbPort))
	if err := waitHealthy("127.0.0.1:"+lbPort, p.exited, ""); err != nil {
		t.Fatalf("haproxy on port %s: %v\n%s", lbPort, err, readLog(p.log))
	}
	f.haproxy, f.URL = p, "http://127.0.0.1:"+lbPort+gateway.MCPPath
	// HAProxy counts a replica up after its first check.
	for _, r := range f.Replicas {
		f.waitServedBy(r.Name)
	}
	return f
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// AddReplica starts one more preflight serve with the fleet's config. A
// replica added after Start is not behind HAProxy: reach it at its URL.
func (f *Fleet) AddReplica() *Replica {
	t := f.t
	t.Helper()
	name := fmt.Sprintf("r%d", len(f.Replicas)+1)
	bin, _ := build()
	for attempt := 0; ; attempt++ {
		port := freeport.Arg(t)
		p := f.start(name, filepath.Join(bin, "preflight"), []string{"serve", "-http", "127.0.0.1:" + port, "-config", f.config, "-log-level", "warn"}, f.env)
		err := waitHealthy("127.0.0.1:"+port, p.exited, `"status": "ok"`)
		if err == nil {
			r := &Replica{Name: name, Port: port, URL: "http://127.0.0.1:" + port + gateway.MCPPath, p: p}
			f.Replicas = append(f.Replicas, r)
			return r
		}
		p.stop(syscall.SIGKILL)
		if attempt == 2 {
			t.Fatalf("%s: %v\n%s", name, err, readLog(p.log))
		}
	}
}

// Kill kills replica r at once (SIGKILL), as a crash would.
func (f *Fleet) Kill(r *Replica) { r.p.stop(syscall.SIGKILL) }

// Health reads replica r's health report.
func (r *Replica) Health(ctx context.Context) (gateway.Health, error) {
	var h gateway.Health
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(r.URL, gateway.MCPPath)+gateway.HealthPath, nil)
	if err != nil {
		return h, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return h, err
	}
	defer resp.Body.Close()
	return h, json.NewDecoder(resp.Body).Decode(&h)
}

// Alive reports whether r's process still runs.
func (r *Replica) Alive() bool {
	select {
	case <-r.p.exited:
		return false
	default:
		return true
	}
}

// waitServedBy waits until a request through HAProxy reaches replica name.
func (f *Fleet) waitServedBy(name string) {
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		resp, err := http.Get(strings.TrimSuffix(f.URL, gateway.MCPPath) + gateway.HealthPath)
		if err == nil {
			resp.Body.Close()
			if resp.Header.Get(ReplicaHeader) == name {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.t.Fatalf("HAProxy sent nothing to %s within %v\n%s", name, startTimeout, readLog(f.haproxy.log))
}

// start starts a process whose output goes to DIR/NAME.log, stopped when
// the test ends.
func (f *Fleet) start(name, bin string, args, env []string) *process {
	t := f.t
	log := filepath.Join(f.Dir, name+".log")
	out, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr, cmd.Dir = env, out, out, f.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		out.Close()
		t.Fatal(err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{}), log: log}
	go func() {
		_ = cmd.Wait()
		out.Close()
		close(p.exited)
	}()
	t.Cleanup(func() { p.stop(syscall.SIGTERM) })
	return p
}

// stop sends sig to the process group (the replica's stdio upstreams
// included) and waits, killing it after stopTimeout.
func (p *process) stop(sig syscall.Signal) {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.exited:
	case <-time.After(stopTimeout):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) // children left behind
}

// waitHealthy waits until GET /healthz at addr answers 200 (with want in
// the body, if set), or the process exits.
func waitHealthy(addr string, exited <-chan struct{}, want string) error {
	deadline := time.Now().Add(startTimeout)
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errors.New("exited")
		default:
		}
		resp, err := client.Get("http://" + addr + gateway.HealthPath)
		if err == nil {
			var body strings.Builder
			_, _ = ioCopy(&body, resp)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(body.String(), want) {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("not healthy within %v", startTimeout)
}

// readLog returns the end of a log, for a failure's message.
func readLog(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Log returns the end of replica r's log, for a failure's message.
func (r *Replica) Log() string { return readLog(r.p.log) }

// loginLink matches the one-time login link a replica prints for its
// approval page.
var loginLink = regexp.MustCompile(`(?m)^  (http://127\.0\.0\.1:\d+/ui/login\?token=(\S+))$`)

// LoginLink returns the one-time link to sign in to replica r's approval
// page, as it printed it, and the token in it.
func (r *Replica) LoginLink() (link, token string, err error) {
	b, err := os.ReadFile(r.p.log)
	if err != nil {
		return "", "", err
	}
	m := loginLink.FindSubmatch(b)
	if m == nil {
		return "", "", fmt.Errorf("%s printed no login link", r.Name)
	}
	return string(m[1]), string(m[2]), nil
}
