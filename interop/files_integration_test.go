//go:build integration

package interop

import (
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"go.uber.org/goleak"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/examples/files/filetool"
)

// The real TypeScript SDK v2 client against examples/files: manage_files
// resolves to read-only for read and destructive for delete, in both
// shapes, both protocol eras, over HTTP and stdio.

var (
	extensionDeclared = map[string]any{preflight.ExtensionToolResolution: map[string]any{}, preflight.MetaPolicyHints: map[string]any{}}
	readArgs          = map[string]any{"path": "notes.txt", "action": "read"}
	deleteArgs        = map[string]any{"path": "notes.txt", "action": "delete"}
)

func resolveStep(args map[string]any) Step {
	return Request(preflight.MethodResolve, map[string]any{"name": filetool.Name, "arguments": args})
}

// filesPlan lists, resolves read and delete, calls read, then delete.
func filesPlan(tr Transport, era string, extension bool) Plan {
	p := Plan{Transport: tr, Era: era, Steps: []Step{
		List(),
		Request("tools/list", nil),
		resolveStep(readArgs),
		resolveStep(deleteArgs),
		Call(filetool.Name, readArgs),
		Call(filetool.Name, deleteArgs),
	}}
	if extension {
		p.Extensions = extensionDeclared
	}
	return p
}

// checkFiles asserts on what the client saw of filesPlan's steps.
func checkFiles(t *testing.T, rep Report, wantVersion string, extension bool) {
	t.Helper()
	if rep.ProtocolVersion != wantVersion {
		t.Errorf("negotiated %q, want %q", rep.ProtocolVersion, wantVersion)
	}
	if _, ok := rep.ServerCapabilities["extensions"].(map[string]any)[preflight.ExtensionToolResolution]; !ok {
		t.Errorf("server capabilities lack the extension: %v", rep.ServerCapabilities)
	}
	for i, r := range rep.Results {
		if !r.OK {
			t.Fatalf("step %d (%s) failed: %v", i, r.Op, r.Error)
		}
	}
	// Typed listTools keeps _meta: the marker shows iff declared.
	tools := rep.Results[0].Map()["tools"].([]any)
	listed := tools[0].(map[string]any)
	meta, _ := listed["_meta"].(map[string]any)
	if _, marked := meta[preflight.ExtensionToolResolution]; marked != extension {
		t.Errorf("typed listTools: marker present = %v, want %v", marked, extension)
	}
	// The raw list keeps the seed's top-level resolve field, sent only
	// when the extension was not declared.
	raw := rep.Results[1].Map()["tools"].([]any)[0].(map[string]any)
	if _, seed := raw["resolve"]; seed == extension || !extension && raw["resolve"] != true {
		t.Errorf("raw tools/list: resolve = %v, want it only without the extension", raw["resolve"])
	}

	for i, want := range []struct {
		readOnly, destructive bool
		effect                string
	}{{true, false, "read"}, {false, true, "delete"}} {
		res := rep.Results[2+i].Map()
		var ann, hintsMeta map[string]any
		if extension {
			if res["name"] != filetool.Name {
				t.Errorf("extension shape: name = %v", res["name"])
			}
			if _, ok := res["tool"]; ok {
				t.Errorf("extension shape carries a tool: %v", res)
			}
			ann, _ = res["annotations"].(map[string]any)
			// The hints travel as one negotiated object.
			meta, _ := res["_meta"].(map[string]any)
			obj, _ := meta[preflight.MetaPolicyHints].(map[string]any)
			hintsMeta = map[string]any{preflight.MetaEffect: obj["effect"]}
			if _, scalar := meta[preflight.MetaEffect]; scalar {
				t.Errorf("extension shape: scalar hint keys in the result's _meta: %v", meta)
			}
		} else {
			tool, ok := res["tool"].(map[string]any)
			if !ok {
				t.Fatalf("seed shape: no tool in %v", res)
			}
			for _, k := range []string{"name", "description", "inputSchema"} {
				if !reflect.DeepEqual(tool[k], raw[k]) {
					t.Errorf("seed shape: %s differs from tools/list", k)
				}
			}
			ann, _ = tool["annotations"].(map[string]any)
			hintsMeta, _ = tool["_meta"].(map[string]any)
		}
		if ann["readOnlyHint"] != want.readOnly || ann["destructiveHint"] != want.destructive {
			t.Errorf("resolve %s: annotations %v, want readOnly=%v destructive=%v", want.effect, ann, want.readOnly, want.destructive)
		}
		if hintsMeta[preflight.MetaEffect] != want.effect {
			t.Errorf("resolve %s: effect hint = %v", want.effect, hintsMeta[preflight.MetaEffect])
		}
	}
	text := func(i int) string {
		c := rep.Results[i].Map()["content"].([]any)
		return c[0].(map[string]any)["text"].(string)
	}
	if got := text(4); got != "hello" {
		t.Errorf("read returned %q, want the file's content", got)
	}
	if got := text(5); got != "deleted: notes.txt" {
		t.Errorf("delete returned %q", got)
	}
}

// filesEras are the protocol eras every files test runs in.
var filesEras = []struct{ name, plan, version string }{
	{"2026-07-28", EraModern, "2026-07-28"},
	{"2025-11-25", EraLegacy, "2025-11-25"},
}

func filesRoot(t *testing.T) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestFilesHTTP(t *testing.T) {
	for _, era := range filesEras {
		for _, extension := range []bool{true, false} {
			shape := map[bool]string{true: "extension", false: "seed"}[extension]
			t.Run(era.name+"/"+shape, func(t *testing.T) {
				defer goleak.VerifyNone(t)
				root, err := os.OpenRoot(filesRoot(t))
				if err != nil {
					t.Fatal(err)
				}
				defer root.Close()
				hs := httptest.NewServer(endpoint.NewHandler(filetool.NewServer(root, nil), nil))
				defer hs.Close()
				rep := RunTS(t, filesPlan(Transport{HTTP: hs.URL}, era.plan, extension))
				checkFiles(t, rep, era.version, extension)
			})
		}
	}
}

func TestFilesStdio(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "files")
	build := exec.Command("go", "build", "-o", bin, "../examples/files")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/files: %v\n%s", err, out)
	}
	for _, era := range filesEras {
		for _, extension := range []bool{true, false} {
			shape := map[bool]string{true: "extension", false: "seed"}[extension]
			t.Run(era.name+"/"+shape, func(t *testing.T) {
				tr := Transport{Stdio: &Stdio{Command: bin, Args: []string{"-root", filesRoot(t)}}}
				checkFiles(t, RunTS(t, filesPlan(tr, era.plan, extension)), era.version, extension)
			})
		}
	}
}
