package image

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestContainerfile reads the Containerfile at the repository's root and
// checks that it makes the image Build makes: the same user, paths,
// environment, port, labels, entrypoint and command.
func TestContainerfile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "Containerfile"))
	if err != nil {
		t.Fatal(err)
	}
	final := instructions(string(data))
	want := map[string]string{
		"USER":    fmt.Sprintf("%d:%d", UID, GID),
		"WORKDIR": DataDir,
		"EXPOSE":  strconv.Itoa(Port) + "/tcp",
	}
	for k, v := range want {
		if got := final[k]; len(got) != 1 || got[0] != v {
			t.Errorf("%s %q, want %q", k, got, v)
		}
	}
	for k, v := range map[string][]string{"ENTRYPOINT": Entrypoint(), "CMD": Cmd()} {
		var got []string
		if len(final[k]) != 1 || json.Unmarshal([]byte(final[k][0]), &got) != nil || !slices.Equal(got, v) {
			t.Errorf("%s %q, want %q", k, final[k], v)
		}
	}
	if env := strings.Fields(strings.Join(final["ENV"], " ")); !slices.Equal(env, Env()) {
		t.Errorf("ENV %q, want %q", env, Env())
	}
	labelText := strings.Join(final["LABEL"], " ")
	b := &Built{}
	for _, k := range slices.Sorted(maps.Keys(labels(b))) {
		v := labels(b)[k]
		switch k {
		case "org.opencontainers.image.revision", "org.opencontainers.image.version", "org.opencontainers.image.created":
			if !strings.Contains(labelText, k+"=") {
				t.Errorf("no label %s", k)
			}
		default:
			if !strings.Contains(labelText, k+"="+strconv.Quote(v)) {
				t.Errorf("label %s is not %q", k, v)
			}
		}
	}
	if copies := final["COPY"]; !slices.Contains(copies, fmt.Sprintf("--from=build --chown=%d:%d %s %s", UID, GID, DataDir, DataDir)) {
		t.Errorf("COPY %q: %s is not copied owned by %d:%d", copies, DataDir, UID, GID)
	}
	text := string(data)
	for _, s := range []string{
		"-o /out" + BinaryPath, "CGO_ENABLED=0", "-trimpath", "-buildid=",
		"/out" + CertsPath, "/out" + ConfigDir, "chmod 1777 /out/tmp",
		strings.ReplaceAll(baseFile(t, "/etc/passwd"), "\n", `\n`),
		strings.ReplaceAll(baseFile(t, "/etc/group"), "\n", `\n`),
	} {
		if !strings.Contains(text, s) {
			t.Errorf("the Containerfile does not say %q", s)
		}
	}
}

// instructions are the Containerfile's final stage's instructions, each
// with the arguments of each use, continued lines joined.
func instructions(text string) map[string][]string {
	text = strings.ReplaceAll(text, "\\\n", " ")
	stage := map[string][]string{}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		word, args, _ := strings.Cut(line, " ")
		if word == "FROM" {
			stage = map[string][]string{}
		}
		stage[word] = append(stage[word], strings.Join(strings.Fields(args), " "))
	}
	return stage
}

func baseFile(t *testing.T, path string) string {
	t.Helper()
	for _, e := range baseEntries() {
		if e.path == path {
			return string(e.data)
		}
	}
	t.Fatalf("no %s in the base layer", path)
	return ""
}
