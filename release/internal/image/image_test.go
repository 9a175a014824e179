package image

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/preflightmcp/preflight/release/internal/dist"
)

// TestImage builds the image of HEAD twice into two directories and checks
// that both are the same to the byte, then what the image holds: the
// config, the files of the layers, and that the binary of this machine's
// platform runs and prints the version and commit.
func TestImage(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	dirs := []string{t.TempDir(), t.TempDir()}
	var built []*Built
	for _, dir := range dirs {
		b, err := Build(ctx, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := Write(b, dir); err != nil {
			t.Fatal(err)
		}
		built = append(built, b)
	}
	t.Logf("two builds in %v", time.Since(start).Round(time.Second))
	b := built[0]

	t.Run("reproducible", func(t *testing.T) {
		d0, err := built[0].Index.Digest()
		if err != nil {
			t.Fatal(err)
		}
		d1, err := built[1].Index.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if d0 != d1 {
			t.Errorf("index digests differ: %s and %s", d0, d1)
		}
		t.Logf("index %s", d0)
		files0, files1 := readTree(t, dirs[0]), readTree(t, dirs[1])
		if len(files0) < 8 { // oci-layout, index.json, the archive, index, 2 manifests, 2 configs, 3 layers
			t.Fatalf("only %d files written: %v", len(files0), slices.Collect(maps.Keys(files0)))
		}
		for name, data := range files0 {
			if !bytes.Equal(data, files1[name]) {
				t.Errorf("%s differs between the two builds", name)
			}
		}
		if len(files0) != len(files1) {
			t.Errorf("%d files and %d files", len(files0), len(files1))
		}
	})

	lay, err := layout.ImageIndexFromPath(filepath.Join(dirs[0], LayoutDir))
	if err != nil {
		t.Fatal(err)
	}
	top, err := lay.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if want := "ghcr.io/preflightmcp/preflight:" + strings.TrimPrefix(b.Version, "v"); len(top.Manifests) != 1 || top.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != want {
		t.Fatalf("index.json: %+v, want one index named %s", top.Manifests, want)
	}
	idx, err := lay.ImageIndex(top.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, m := range im.Manifests {
		platforms = append(platforms, m.Platform.String())
	}
	if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(platforms, want) {
		t.Errorf("platforms %v, want %v", platforms, want)
	}
	for _, m := range im.Manifests {
		img, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(m.Platform.String(), func(t *testing.T) {
			checkConfig(t, img, b, *m.Platform)
			files := checkLayers(t, img, b)
			if size, err := imageSize(img); err == nil {
				t.Logf("%s: %d bytes compressed", m.Platform, size)
			}
			checkBinary(t, files[BinaryPath], *m.Platform, b)
		})
	}
}

// checkConfig checks the config of the image of platform p.
func checkConfig(t *testing.T, img v1.Image, b *Built, p v1.Platform) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if cf.OS != p.OS || cf.Architecture != p.Architecture {
		t.Errorf("config is for %s/%s", cf.OS, cf.Architecture)
	}
	if c.User != "65532:65532" {
		t.Errorf("User %q, want the non-root 65532:65532", c.User)
	}
	if !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/preflight"}) {
		t.Errorf("Entrypoint %q", c.Entrypoint)
	}
	if !slices.Equal(c.Cmd, []string{"serve", "-http", "0.0.0.0:8080", "-config", "/etc/preflight/config.yaml"}) {
		t.Errorf("Cmd %q", c.Cmd)
	}
	if _, ok := c.ExposedPorts["8080/tcp"]; !ok || len(c.ExposedPorts) != 1 {
		t.Errorf("ExposedPorts %v", c.ExposedPorts)
	}
	if c.WorkingDir != "/data" || !slices.Contains(c.Env, "HOME=/data") || !slices.Contains(c.Env, "XDG_STATE_HOME=/data") {
		t.Errorf("WorkingDir %q, Env %q: want both at /data", c.WorkingDir, c.Env)
	}
	if !cf.Created.Time.Equal(b.Created) {
		t.Errorf("Created %v, want the commit's time %v", cf.Created.Time, b.Created)
	}
	want := map[string]string{
		"org.opencontainers.image.source":   "https://github.com/preflightmcp/preflight",
		"org.opencontainers.image.revision": b.Commit,
		"org.opencontainers.image.version":  b.Version,
		"org.opencontainers.image.licenses": "Apache-2.0",
		"org.opencontainers.image.title":    "preflight",
		"org.opencontainers.image.created":  b.Created.Format(time.RFC3339),
	}
	for k, v := range want {
		if c.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, c.Labels[k], v)
		}
	}
	if c.Labels["org.opencontainers.image.description"] == "" {
		t.Error("no description label")
	}
}

// checkLayers checks every entry of the image's layers (owner, mode, time,
// order) and returns the regular files' contents by path.
func checkLayers(t *testing.T, img v1.Image, b *Built) map[string][]byte {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		mode     int64
		uid, gid int
		dir      bool
	}
	wants := map[string]want{
		"etc/": {mode: 0o755, dir: true}, "etc/group": {mode: 0o644}, "etc/passwd": {mode: 0o644},
		"etc/preflight/": {mode: 0o755, dir: true}, "etc/ssl/": {mode: 0o755, dir: true},
		"etc/ssl/certs/": {mode: 0o755, dir: true}, "etc/ssl/certs/ca-certificates.crt": {mode: 0o644},
		"data/": {mode: 0o755, uid: 65532, gid: 65532, dir: true}, "tmp/": {mode: 0o1777, dir: true},
		"usr/": {mode: 0o755, dir: true}, "usr/local/": {mode: 0o755, dir: true},
		"usr/local/bin/": {mode: 0o755, dir: true}, "usr/local/bin/preflight": {mode: 0o755},
	}
	files := map[string][]byte{}
	seen := map[string]bool{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		var names []string
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, h.Name)
			seen[h.Name] = true
			w, ok := wants[h.Name]
			switch {
			case !ok:
				t.Errorf("unexpected %s in a layer", h.Name)
			case h.Mode != w.mode || h.Uid != w.uid || h.Gid != w.gid || (h.Typeflag == tar.TypeDir) != w.dir:
				t.Errorf("%s: mode %o, owner %d:%d, type %c; want mode %o, owner %d:%d, directory %v", h.Name, h.Mode, h.Uid, h.Gid, h.Typeflag, w.mode, w.uid, w.gid, w.dir)
			}
			if h.Uname != "" || h.Gname != "" {
				t.Errorf("%s: owner names %q:%q, want numeric ids only", h.Name, h.Uname, h.Gname)
			}
			if !h.ModTime.Equal(b.Created) {
				t.Errorf("%s: time %v, want %v", h.Name, h.ModTime, b.Created)
			}
			if h.Typeflag == tar.TypeReg {
				data, err := io.ReadAll(tr)
				if err != nil {
					t.Fatal(err)
				}
				files["/"+h.Name] = data
			}
		}
		rc.Close()
		if !slices.IsSorted(names) {
			t.Errorf("layer entries not sorted: %v", names)
		}
	}
	for name := range wants {
		if !seen[name] {
			t.Errorf("%s missing from the layers", name)
		}
	}
	if !strings.Contains(string(files["/etc/passwd"]), "preflight:x:65532:65532:preflight:/data:") {
		t.Errorf("/etc/passwd has no user 65532 at /data:\n%s", files["/etc/passwd"])
	}
	if !strings.Contains(string(files["/etc/group"]), "preflight:x:65532:") {
		t.Errorf("/etc/group has no group 65532:\n%s", files["/etc/group"])
	}
	if n := countCerts(t, files[CertsPath]); n < 100 {
		t.Errorf("%s holds %d certificates", CertsPath, n)
	}
	return files
}

// checkBinary runs binary, the image's preflight for p, when this machine
// runs p, and otherwise reads its build information: either way it must
// be built from b.Commit, unmodified, at b.Version.
func checkBinary(t *testing.T, binary []byte, p v1.Platform, b *Built) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "preflight")
	if err := os.WriteFile(path, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	if p.OS != runtime.GOOS || p.Architecture != runtime.GOARCH {
		if version, err := dist.Stamped(path, b.Commit); err != nil || version != b.Version {
			t.Errorf("binary for %s: version %q (%v), want %s", p, version, err, b.Version)
		}
		return
	}
	out, err := exec.Command(path, "version", "-json").Output()
	if err != nil {
		t.Fatalf("preflight version: %v", err)
	}
	var v struct {
		Version, Commit string
		Modified        bool
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("preflight version: %v: %s", err, out)
	}
	if v.Version != b.Version || v.Commit != b.Commit || v.Modified {
		t.Errorf("preflight version says %s, want version %s, commit %s, unmodified", out, b.Version, b.Commit)
	}
	out, err = exec.Command(path, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", bytes.TrimSpace(out))
}

func countCerts(t *testing.T, data []byte) int {
	t.Helper()
	n := 0
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			t.Errorf("certificate %d: %v", n, err)
		}
		n++
	}
	return n
}

func imageSize(img v1.Image) (int64, error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, err
	}
	size := m.Config.Size
	for _, l := range m.Layers {
		size += l.Size
	}
	return size, nil
}

// readTree reads every file under dir by its relative path.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		files[rel] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
