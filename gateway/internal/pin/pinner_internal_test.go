package pin

import (
	"context"
	"fmt"
	"testing"
)

// TestAllowedRemembersNothingOfUnknownServers checks that calls naming
// servers no Check has seen do not grow the Pinner's memory.
func TestAllowedRemembersNothingOfUnknownServers(t *testing.T) {
	t.Parallel()
	p := New(NewMemoryStore(0), nil)
	for i := range 1000 {
		if err := p.Allowed(context.Background(), fmt.Sprint("server", i), "tool"); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(p.servers); n != 0 {
		t.Errorf("%d servers remembered", n)
	}
}
