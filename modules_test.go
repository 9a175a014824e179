package preflight_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/version"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const sdkModule = "github.com/modelcontextprotocol/go-sdk"

// libraryExtras are the modules the library may use beyond the official
// SDK and the SDK's own dependencies, with the reason for each. A heavy
// dependency (a database driver, Redis, a token counter, a metrics
// library) belongs in the gateway module instead.
func libraryExtras() map[string]string {
	return map[string]string{
		"github.com/preflightmcp/preflight": "the library itself",
		"github.com/google/jsonschema-go":   "input and form schemas (the SDK's own schema package)",
		"github.com/fsnotify/fsnotify":      "disclose's descriptions folder",
		"golang.org/x/sys":                  "fsnotify's system calls",
		"golang.org/x/time":                 "disclose's rate limits",
	}
}

// listedPackage is one package of go list -deps.
type listedPackage struct {
	path, module string
	imports      []string
}

// goList runs the go tool in the library module alone (GOWORK=off: what a
// user who requires only this module builds) and returns its output.
func goList(t *testing.T, args ...string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go tool on PATH (go test puts its own first): %v", err)
	}
	cmd := exec.Command(goTool, append([]string{"list"}, args...)...)
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// libraryDeps lists every package the library module's packages build
// with (tests left out), standard library included.
func libraryDeps(t *testing.T) []listedPackage {
	out := goList(t, "-deps", "-f", "{{.ImportPath}}\t{{with .Module}}{{.Path}}{{end}}\t{{join .Imports \" \"}}", "./...")
	var pkgs []listedPackage
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 3 {
			t.Fatalf("go list line %q", sc.Text())
		}
		pkgs = append(pkgs, listedPackage{path: f[0], module: f[1], imports: strings.Fields(f[2])})
	}
	return pkgs
}

// heavyModules returns, for each module that pkgs use but that is neither
// the SDK, a module the SDK's packages pull in themselves, nor one of
// extras, a description naming a package that imports it.
func heavyModules(pkgs []listedPackage, extras map[string]string) []string {
	byPath := map[string]listedPackage{}
	for _, p := range pkgs {
		byPath[p.path] = p
	}
	// Every module reachable from the SDK's packages comes with the SDK.
	allowed := map[string]bool{}
	seen := map[string]bool{}
	var walk func(path string)
	walk = func(path string) {
		if seen[path] {
			return
		}
		seen[path] = true
		p := byPath[path]
		allowed[p.module] = true
		for _, imp := range p.imports {
			walk(imp)
		}
	}
	for _, p := range pkgs {
		if p.module == sdkModule {
			walk(p.path)
		}
	}
	for m := range extras {
		allowed[m] = true
	}
	// Report each other module once, at an import that enters it from
	// another module.
	var heavy []string
	reported := map[string]bool{}
	for _, q := range pkgs {
		for _, imp := range q.imports {
			p := byPath[imp]
			if p.module == "" || allowed[p.module] || reported[p.module] || p.module == q.module {
				continue // the standard library, allowed, reported, or inside one module
			}
			reported[p.module] = true
			heavy = append(heavy, fmt.Sprintf("%s (package %s, imported by %s)", p.module, p.path, q.path))
		}
	}
	slices.Sort(heavy)
	return heavy
}

// goDirective returns the version of the go directive of a go.mod file.
func goDirective(gomod []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "//")
		if f := strings.Fields(line); len(f) == 2 && f[0] == "go" {
			return f[1]
		}
	}
	return ""
}

// TestLibraryModuleIsLight keeps the library module light for a server
// author who imports resolve and hints (docs/design.md, "Modules"): its go
// directive asks for no newer Go than the official SDK's, and its packages
// use no module outside the SDK, the SDK's own dependencies and
// libraryExtras.
func TestLibraryModuleIsLight(t *testing.T) {
	gomod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	ours := goDirective(gomod)
	sdk := strings.TrimSpace(goList(t, "-m", "-f", "{{.GoVersion}}", sdkModule))
	if ours == "" || sdk == "" {
		t.Fatalf("go directives: library %q, SDK %q", ours, sdk)
	}
	if version.Compare("go"+ours, "go"+sdk) > 0 {
		t.Errorf("go.mod asks for Go %s, newer than the %s the official SDK needs: a library user would have to upgrade Go for this module alone", ours, sdk)
	}

	pkgs := libraryDeps(t)
	if !slices.ContainsFunc(pkgs, func(p listedPackage) bool { return p.module == sdkModule }) {
		t.Fatalf("go list shows no package of %s: the check would see nothing", sdkModule)
	}
	for _, h := range heavyModules(pkgs, libraryExtras()) {
		t.Errorf("the library module depends on %s: move the code that needs it to the gateway module, or add the module to libraryExtras with a reason", h)
	}
}

// TestHeavyModules shows the check fails on a heavy dependency and allows
// what comes with the SDK.
func TestHeavyModules(t *testing.T) {
	pkgs := []listedPackage{
		{path: "github.com/preflightmcp/preflight/hints", module: "github.com/preflightmcp/preflight",
			imports: []string{"github.com/modelcontextprotocol/go-sdk/mcp", "github.com/redis/go-redis/v9", "strings"}},
		{path: "github.com/modelcontextprotocol/go-sdk/mcp", module: sdkModule, imports: []string{"github.com/yosida95/uritemplate/v3"}},
		{path: "github.com/yosida95/uritemplate/v3", module: "github.com/yosida95/uritemplate/v3"},
		{path: "github.com/redis/go-redis/v9", module: "github.com/redis/go-redis/v9", imports: []string{"github.com/cespare/xxhash/v2"}},
		{path: "github.com/cespare/xxhash/v2", module: "github.com/cespare/xxhash/v2"},
		{path: "strings"},
	}
	got := heavyModules(pkgs, libraryExtras())
	want := []string{
		"github.com/cespare/xxhash/v2 (package github.com/cespare/xxhash/v2, imported by github.com/redis/go-redis/v9)",
		"github.com/redis/go-redis/v9 (package github.com/redis/go-redis/v9, imported by github.com/preflightmcp/preflight/hints)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("heavyModules = %q, want %q", got, want)
	}
	for gomod, want := range map[string]string{
		"module m\n\ngo 1.25.0\n":                                   "1.25.0",
		"module m // go 1.20\n\ngo 1.26.0 // newer\nrequire x v1\n": "1.26.0",
		"module m\n": "",
	} {
		if got := goDirective([]byte(gomod)); got != want {
			t.Errorf("goDirective(%q) = %q, want %q", gomod, got, want)
		}
	}
}
