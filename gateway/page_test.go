package gateway

import (
	"encoding/base64"
	"testing"
)

func TestPage(t *testing.T) {
	t.Parallel()
	g := &Gateway{opts: Options{PageSize: 2}}
	from, to, next, err := g.page(7, "", 5)
	if err != nil || from != 0 || to != 2 || next == "" {
		t.Fatalf("first page: %d %d %q %v", from, to, next, err)
	}
	from, to, next2, err := g.page(7, next, 5)
	if err != nil || from != 2 || to != 4 || next2 == "" {
		t.Fatalf("second page: %d %d %q %v", from, to, next2, err)
	}
	from, to, last, err := g.page(7, next2, 5)
	if err != nil || from != 4 || to != 5 || last != "" {
		t.Fatalf("last page: %d %d %q %v", from, to, last, err)
	}
	if _, _, _, err := g.page(8, next, 5); err == nil {
		t.Error("a cursor of an older catalog was accepted")
	}
	for _, bad := range []string{"x", base64.RawURLEncoding.EncodeToString([]byte("7:99")), base64.RawURLEncoding.EncodeToString([]byte("7:-1"))} {
		if _, _, _, err := g.page(7, bad, 5); err == nil {
			t.Errorf("cursor %q accepted", bad)
		}
	}
}

// FuzzPage checks that no cursor a client sends makes a page fall outside
// the list.
func FuzzPage(f *testing.F) {
	f.Add("", 3)
	f.Add(base64.RawURLEncoding.EncodeToString([]byte("1:2")), 3)
	f.Add("MTox", 0)
	f.Fuzz(func(t *testing.T, cursor string, n int) {
		if n < 0 || n > 1<<20 {
			return
		}
		g := &Gateway{opts: Options{PageSize: 7}}
		from, to, _, err := g.page(1, cursor, n)
		if err == nil && (from < 0 || from > to || to > n) {
			t.Fatalf("page(%q, %d) = [%d, %d)", cursor, n, from, to)
		}
	})
}
