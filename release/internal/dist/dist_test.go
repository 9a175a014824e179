package dist

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// repoRoot is the repository's root seen from this package's directory.
const repoRoot = "../../.."

// TestBuild builds a release for the machine's own platform, twice: the
// archive holds the binary, the LICENSE and the README; SHA256SUMS lists
// every file with its checksum; the SBOM names the gateway's modules at the
// versions its go.mod requires; the binary prints the version given and
// the HEAD commit; and the two builds are the same, byte for byte.
func TestBuild(t *testing.T) {
	host := Target{runtime.GOOS, runtime.GOARCH}
	if !slices.Contains(Targets(), host) {
		t.Fatalf("this machine's platform %s is not a release target", host)
	}
	const version = "v9.9.9-test"
	ctx := context.Background()
	out := t.TempDir()
	b, err := Build(ctx, Options{Repo: repoRoot, Version: version, Out: out, Targets: []Target{host}})
	if err != nil {
		t.Fatal(err)
	}
	name := "preflight_" + version + "_" + host.OS + "_" + host.Arch
	if want := []string{filepath.Join(out, name+archiveExt(host))}; !slices.Equal(b.Archives, want) {
		t.Fatalf("archives %v, want %v", b.Archives, want)
	}

	files := unpack(t, b.Archives[0])
	for _, f := range []string{binaryName(host), "LICENSE", "README.md"} {
		if len(files[name+"/"+f]) == 0 {
			t.Errorf("%s has no %s/%s; it holds %v", b.Archives[0], name, f, slices.Sorted(mapKeys(files)))
		}
	}
	license, err := os.ReadFile(filepath.Join(repoRoot, "LICENSE"))
	if err != nil || !bytes.Equal(files[name+"/LICENSE"], license) {
		t.Errorf("the archive's LICENSE is not the repository's (%v)", err)
	}

	sums := readSums(t, out)
	if want := []string{name + ".cdx.json", name + archiveExt(host)}; !slices.Equal(slices.Sorted(mapKeys(sums)), want) {
		t.Errorf("SHA256SUMS lists %v, want %v", slices.Sorted(mapKeys(sums)), want)
	}
	for f, sum := range sums {
		data, err := os.ReadFile(filepath.Join(out, f))
		if got := sha256.Sum256(data); err != nil || hex.EncodeToString(got[:]) != sum {
			t.Errorf("SHA256SUMS says %s for %s, which has %x (%v)", sum, f, got, err)
		}
	}

	checkSBOM(t, filepath.Join(out, name+".cdx.json"), version)

	bin := filepath.Join(t.TempDir(), binaryName(host))
	if err := os.WriteFile(bin, files[name+"/"+binaryName(host)], 0o755); err != nil {
		t.Fatal(err)
	}
	js, err := exec.Command(bin, "version", "-json").Output()
	if err != nil {
		t.Fatalf("preflight version -json: %v", err)
	}
	var v struct {
		Version, Commit string
		Modified        bool
	}
	if err := json.Unmarshal(js, &v); err != nil || v.Version != version || v.Commit != b.Commit || v.Modified {
		t.Errorf("preflight version -json says %s (%v); want version %s, commit %s, unmodified", js, err, version, b.Commit)
	}
	head, err := exec.Command("git", "-C", repoRoot, "rev-parse", "HEAD").Output()
	if err != nil || strings.TrimSpace(string(head)) != b.Commit {
		t.Errorf("built commit %s, HEAD is %s (%v)", b.Commit, head, err)
	}

	again := t.TempDir()
	if _, err := Build(ctx, Options{Repo: repoRoot, Version: version, Out: again, Targets: []Target{host}}); err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(filepath.Join(out, SumsFile))
	second, _ := os.ReadFile(filepath.Join(again, SumsFile))
	if !bytes.Equal(first, second) {
		t.Errorf("two builds of one commit differ:\n%s\n%s", first, second)
	}
}

// checkSBOM checks that the CycloneDX SBOM at path describes the command
// at version and lists the modules the gateway requires directly that the
// command links, at the versions its go.mod requires.
func checkSBOM(t *testing.T, path, version string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var bom struct {
		BOMFormat string `json:"bomFormat"`
		Metadata  struct {
			Component struct{ Name, Version string }
		}
		Components []struct{ Name, Version string }
	}
	if err := json.Unmarshal(data, &bom); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	main := bom.Metadata.Component
	if bom.BOMFormat != "CycloneDX" || main.Name != "github.com/preflightmcp/preflight/gateway" || main.Version != version {
		t.Errorf("SBOM %s describes %s %s %s", path, bom.BOMFormat, main.Name, main.Version)
	}
	listed := map[string]string{}
	for _, c := range bom.Components {
		listed[c.Name] = c.Version
	}
	gomod, err := os.ReadFile(filepath.Join(repoRoot, "gateway", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.Parse("go.mod", gomod, nil)
	if err != nil {
		t.Fatal(err)
	}
	required := map[string]string{}
	for _, r := range mf.Require {
		required[r.Mod.Path] = r.Mod.Version
	}
	for _, m := range []string{"github.com/modelcontextprotocol/go-sdk", "github.com/redis/go-redis/v9", "github.com/jackc/pgx/v5", "cel.dev/cel-go"} {
		if required[m] == "" || listed[m] != required[m] {
			t.Errorf("SBOM lists %s at %q; gateway/go.mod requires %q", m, listed[m], required[m])
		}
	}
}

// unpack reads the files of a .tar.gz or .zip archive by name.
func unpack(t *testing.T, archive string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	if strings.HasSuffix(archive, ".zip") {
		zr, err := zip.OpenReader(archive)
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		for _, f := range zr.File {
			r, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(r)
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			files[f.Name] = data
		}
		return files
	}
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[hdr.Name] = data
	}
}

// readSums reads SHA256SUMS in dir: the checksum of each file by name.
func readSums(t *testing.T, dir string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, SumsFile))
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	for line := range strings.Lines(string(data)) {
		sum, name, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", line)
		}
		sums[name] = sum
	}
	return sums
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestParseTargets: a list of known targets is read in order; an unknown
// one is refused.
func TestParseTargets(t *testing.T) {
	ts, err := ParseTargets("linux/amd64, windows/arm64")
	if err != nil || !slices.Equal(ts, []Target{{"linux", "amd64"}, {"windows", "arm64"}}) {
		t.Errorf("ParseTargets: %v, %v", ts, err)
	}
	for _, bad := range []string{"linux/386", "plan9/amd64", "linux", ""} {
		if _, err := ParseTargets(bad); err == nil {
			t.Errorf("ParseTargets(%q) accepted", bad)
		}
	}
}

// TestBuildRefusesVersion: a version that is not a plain file name part is
// refused before anything is built.
func TestBuildRefusesVersion(t *testing.T) {
	for _, v := range []string{"", "../v1", "v1 beta", "-v1"} {
		if _, err := Build(context.Background(), Options{Repo: repoRoot, Version: v, Out: t.TempDir()}); err == nil {
			t.Errorf("Build with version %q: no error", v)
		}
	}
}
