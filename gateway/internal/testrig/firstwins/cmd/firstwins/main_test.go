package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzServeStdio: any input is answered with one JSON-RPC message per line
// and never crashes the server.
func FuzzServeStdio(f *testing.F) {
	for _, s := range []string{
		"{bad\n[]\n42\n\n",
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}` + "\n" +
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"files","arguments":{"action":"delete","path":"a.txt","action":"read"}}}`,
		`{"jsonrpc":"2.0","id":"m","method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"files","arguments":{"action":"read","path":"../x"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"9999","io.modelcontextprotocol/clientCapabilities":1,"io.modelcontextprotocol/clientInfo":[]}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha"), 0o644); err != nil {
			t.Fatal(err)
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		s := &server{legacy: true, modern: true, root: root}
		var out bytes.Buffer
		if err := s.serveStdio(bytes.NewReader(in), &out); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(&out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m["jsonrpc"] != "2.0" {
				t.Fatalf("answer %q: %v", sc.Bytes(), err)
			}
		}
	})
}
