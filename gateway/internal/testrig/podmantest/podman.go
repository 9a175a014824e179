// Package podmantest runs the container image users get in Podman, for
// tests: [Image] builds it from the repository's HEAD commit with the
// release module's builder (release/cmd/image) once per commit, into the
// user's cache; [New] gives a test its own Podman storage (root, runroot,
// containers.conf and volumes under a temporary directory), so that tests
// never see or touch a user's images and containers, and removes what the
// test made when it ends. Podman is Debian's, with the runc runtime.
package podmantest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/internal/testrig/gobuild"
)

// Bounds, not synchronisation.
const (
	buildTimeout   = 10 * time.Minute
	commandTimeout = 2 * time.Minute
	startTimeout   = time.Minute
	stopSeconds    = "10"
)

// ArchiveFile is the oci-archive release/cmd/image writes into its output
// directory.
const ArchiveFile = "preflight.oci.tar"

// containersConf is the test-owned containers.conf: no rlimits of its own
// and cgroups by cgroupfs (machines and CI containers that restrict both
// refuse Podman's defaults), runc, the host network, events in a file.
const containersConf = `[containers]
default_ulimits = []
netns = "host"
[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
events_logger = "file"
`

var (
	imageOnce sync.Once
	imagePath string
	imageErr  error
)

// Main runs the tests and fails the run if any goroutine outlived them.
// Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// Image returns the path of the oci-archive of the image of the
// repository's HEAD commit, building it once per commit into
// $XDG_CACHE_HOME/preflight/image/COMMIT (scripts/test builds it there up
// front; older commits' images are removed). Uncommitted changes are not
// in it.
func Image(t testing.TB) string {
	t.Helper()
	imageOnce.Do(func() { imagePath, imageErr = buildImage() })
	if imageErr != nil {
		t.Fatal(imageErr)
	}
	return imagePath
}

func buildImage() (string, error) {
	root, err := gobuild.Root()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse HEAD: %w", err)
	}
	commit := strings.TrimSpace(string(out))
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	images := filepath.Join(cache, "preflight", "image")
	dir := filepath.Join(images, commit)
	archive := filepath.Join(dir, ArchiveFile)
	if _, err := os.Stat(archive); err == nil {
		return archive, nil
	}
	if err := os.MkdirAll(images, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(images, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, "go", "run", "./cmd/image", "-o", tmp)
	cmd.Dir = filepath.Join(root, "release")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("release/cmd/image: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(archive); serr != nil { // not built by another test binary meanwhile
			return "", err
		}
	}
	forgetOld(images, dir)
	return archive, nil
}

// forgetOld removes from images the images of other commits, and builds a
// killed run left, once they are a day old: a test of another work tree
// (another HEAD) may be loading one now.
func forgetOld(images, keep string) {
	old, _ := filepath.Glob(filepath.Join(images, "*"))
	for _, o := range old {
		if fi, err := os.Stat(o); o != keep && err == nil && time.Since(fi.ModTime()) > 24*time.Hour {
			os.RemoveAll(o)
		}
	}
}

// Podman is a test's own Podman: its storage and config under a temporary
// directory.
type Podman struct {
	t    testing.TB
	dir  string
	env  []string
	args []string
}

// New returns t's own Podman; when t ends its containers, volumes and
// images are removed. It fails t when podman is not installed.
func New(t testing.TB) *Podman {
	t.Helper()
	if _, err := exec.LookPath("podman"); err != nil {
		t.Fatal("no podman: apt-get install -y podman runc")
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "containers.conf")
	if err := os.WriteFile(conf, []byte(containersConf), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &Podman{
		t: t, dir: dir,
		env: append(os.Environ(), "CONTAINERS_CONF="+conf),
		// vfs: no overlay mounts, so it works inside containers too and
		// nothing stays mounted under the temporary directory.
		args: []string{"--root", filepath.Join(dir, "root"), "--runroot", filepath.Join(dir, "run"),
			"--storage-driver", "vfs", "--tmpdir", filepath.Join(dir, "tmp")},
	}
	t.Cleanup(func() {
		// Containers are removed by their own cleanups, which run first.
		if _, err := p.Run("volume", "prune", "--force"); err != nil {
			t.Error(err)
		}
		if _, err := p.Run("rmi", "--all", "--force"); err != nil {
			t.Error(err)
		}
	})
	return p
}

// Run runs podman with args and returns its standard output; an error
// carries its standard error.
func (p *Podman) Run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "podman", append(append([]string(nil), p.args...), args...)...)
	cmd.Env = p.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("podman %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

var loaded = regexp.MustCompile(`(?m)^Loaded image(?:\(s\))?: (\S+)$`)

// Load loads the oci-archive into p's storage and returns the image's
// name.
func (p *Podman) Load(archive string) string {
	p.t.Helper()
	out, err := p.Run("load", "--quiet", "--input", archive)
	if err != nil {
		p.t.Fatal(err)
	}
	m := loaded.FindStringSubmatch(out)
	if m == nil {
		p.t.Fatalf("podman load printed no image name: %q", out)
	}
	return m[1]
}

// Container is a started container, removed when the test ends.
type Container struct {
	Name string
	p    *Podman
}

// Start runs a detached container named name with podman run's args
// (options, the image, then the command's arguments), removed (stopped
// with SIGTERM, then killed) when the test ends.
func (p *Podman) Start(name string, args ...string) *Container {
	p.t.Helper()
	c := &Container{Name: name, p: p}
	p.t.Cleanup(func() {
		if _, err := p.Run("rm", "--force", "--time", stopSeconds, name); err != nil {
			p.t.Error(err)
		}
	})
	if _, err := p.Run(append([]string{"run", "--detach", "--name", name}, args...)...); err != nil {
		p.t.Fatal(err)
	}
	return c
}

// PID is the container's main process as the host sees it; an error when
// it is not running.
func (c *Container) PID() (int, error) {
	out, err := c.p.Run("inspect", "--format", "{{.State.Pid}}", c.Name)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("%s is not running (pid %q)", c.Name, strings.TrimSpace(out))
	}
	return pid, nil
}

// Running reports whether the container's process still runs.
func (c *Container) Running() bool {
	out, err := c.p.Run("inspect", "--format", "{{.State.Running}}", c.Name)
	return err == nil && strings.TrimSpace(out) == "true"
}

// Logs returns the end of the container's output, for a failure's message.
func (c *Container) Logs() string {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "podman", append(append([]string(nil), c.p.args...), "logs", c.Name)...)
	cmd.Env = c.p.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		out = append(out, err.Error()...)
	}
	if len(out) > 4000 {
		out = out[len(out)-4000:]
	}
	return string(out)
}

// IDs reads the real, effective, saved and filesystem user and group ids
// of process pid from /proc.
func IDs(pid int) (uids, gids []string, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, nil, err
	}
	for line := range strings.Lines(string(b)) {
		k, v, _ := strings.Cut(line, ":")
		switch k {
		case "Uid":
			uids = strings.Fields(v)
		case "Gid":
			gids = strings.Fields(v)
		}
	}
	if len(uids) != 4 || len(gids) != 4 {
		return nil, nil, errors.New("no Uid and Gid lines in /proc/PID/status")
	}
	return uids, gids, nil
}

// WaitHealthy waits until GET /healthz at addr answers 200, or the
// container stops; bounded by startTimeout.
func (c *Container) WaitHealthy(addr string) error {
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		resp, err := client.Get("http://" + addr + gateway.HealthPath)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if !c.Running() {
			return fmt.Errorf("%s stopped", c.Name)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s not healthy at %s within %v", c.Name, addr, startTimeout)
}
