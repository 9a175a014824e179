//go:build integration

package gateway_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/examples/files/filetool"
	"github.com/preflightmcp/preflight/examples/folders/foldertool"
	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
	"github.com/preflightmcp/preflight/interop"
)

// TestTypeScriptClient drives the TypeScript SDK v2 client through the
// gateway in both eras, against a 2026-07-28 upstream and a 2025-11-25 one:
// it lists, resolves a tool (extension shape), calls one, and answers the
// question of another (input_required for the 2026-07-28 client, a request
// within the call for the legacy one).
func TestTypeScriptClient(t *testing.T) {
	dir, root := foldersRoot(t)
	_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{
		{Name: "files", URL: serveEra(t, foldertool.NewServer(root, nil), modern)},
		{Name: "old", URL: serveEra(t, foldertool.NewServer(root, nil), legacy)},
	}})
	for _, era := range []string{interop.EraModern, interop.EraLegacy} {
		for _, up := range []string{"files", "old"} {
			folder := era + "-" + up
			if err := os.MkdirAll(filepath.Join(dir, folder, "inner"), 0o755); err != nil {
				t.Fatal(err)
			}
			rep := interop.RunTS(t, interop.Plan{
				Transport:  interop.Transport{HTTP: url},
				Era:        era,
				Extensions: map[string]any{preflight.ExtensionToolResolution: map[string]any{}},
				Elicit:     []map[string]any{interop.Accept(map[string]any{"delete": true})},
				Steps: []interop.Step{
					interop.List(),
					interop.Request("tools/resolve", map[string]any{"name": up + "__delete_folder", "arguments": map[string]any{"path": "empty"}}),
					interop.Call(up+"__describe_folder", map[string]any{"path": folder}),
					interop.Call(up+"__delete_folder", map[string]any{"path": folder}),
				},
				Sample: []map[string]any{{"role": "assistant", "model": "m", "content": map[string]any{"type": "text", "text": "A folder of folders."}}},
			})
			name := era + " client, " + up + " upstream"
			for i, r := range rep.Results {
				if !r.OK {
					t.Fatalf("%s: step %d (%s) failed: %v", name, i, r.Op, r.Error)
				}
			}
			if !strings.Contains(string(rep.Results[0].Result), up+"__delete_folder") {
				t.Errorf("%s: list: %s", name, rep.Results[0].Result)
			}
			res := rep.Results[1].Map()
			ann, _ := res["annotations"].(map[string]any)
			if res["name"] != up+"__delete_folder" || ann["destructiveHint"] != false {
				t.Errorf("%s: resolve: %s", name, rep.Results[1].Result)
			}
			if !strings.Contains(string(rep.Results[2].Result), "A folder of folders.") {
				t.Errorf("%s: describe_folder (a sampling question): %s", name, rep.Results[2].Result)
			}
			if !strings.Contains(string(rep.Results[3].Result), "deleted: "+folder) {
				t.Errorf("%s: delete_folder: %s", name, rep.Results[3].Result)
			}
			if len(rep.Asked) != 2 || rep.Asked[1].Method != "elicitation/create" || !strings.HasPrefix(rep.Asked[1].Message(), "Delete "+folder) {
				t.Errorf("%s: questions: %+v", name, rep.Asked)
			}
			if _, err := os.Stat(filepath.Join(dir, folder)); !os.IsNotExist(err) {
				t.Errorf("%s: %s still exists", name, folder)
			}
		}
	}
}

// TestTypeScriptClientConfirms has the TypeScript SDK v2 client answer the
// gateway's confirmation of a delete in both eras (input_required for the
// 2026-07-28 client, a request within the call for the legacy one): a
// decline leaves the file, an accept deletes it.
func TestTypeScriptClientConfirms(t *testing.T) {
	root := filesDir(t)
	s := filetool.NewServer(root, nil)
	t.Cleanup(func() {
		for ss := range s.Sessions() {
			ss.Close()
		}
	})
	_, url := startGateway(t, &gateway.Options{Decisions: &stage.DecideOptions{},
		Upstreams: []gateway.UpstreamSpec{{Name: "files", URL: serveEra(t, s, modern)}}})
	for _, era := range []string{interop.EraModern, interop.EraLegacy} {
		name := era + ".txt"
		path := filepath.Join(root.Name(), name)
		if err := os.WriteFile(path, []byte(era), 0o644); err != nil {
			t.Fatal(err)
		}
		del := map[string]any{"action": "delete", "path": name}
		rep := interop.RunTS(t, interop.Plan{
			Transport: interop.Transport{HTTP: url},
			Era:       era,
			Elicit:    []map[string]any{interop.Decline(), interop.Accept(map[string]any{"confirm": true})},
			Steps:     []interop.Step{interop.Call("manage_files", del), interop.Call("manage_files", del)},
		})
		for i, r := range rep.Results {
			if !r.OK {
				t.Fatalf("%s client: step %d (%s) failed: %v", era, i, r.Op, r.Error)
			}
		}
		if res := string(rep.Results[0].Result); !strings.Contains(res, `"isError":true`) || !strings.Contains(res, "the confirmation was declined") {
			t.Errorf("%s client: declined call: %s", era, res)
		}
		if res := string(rep.Results[1].Result); strings.Contains(res, `"isError":true`) {
			t.Errorf("%s client: accepted call: %s", era, res)
		}
		if len(rep.Asked) != 2 || rep.Asked[0].Method != "elicitation/create" || !strings.Contains(rep.Asked[0].Message(), "Tool: manage_files") ||
			!strings.Contains(rep.Asked[0].Message(), "path: "+name) {
			t.Errorf("%s client: questions: %+v", era, rep.Asked)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("%s client: %s still exists (%v)", era, name, err)
		}
	}
}
