package audit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/audit/sqlstore"
	"github.com/preflightmcp/preflight/hints"
)

// The gateway audits each call around forwarding it: Start before (a
// delete is on disk when it returns), End after.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "audit-example")
	defer os.RemoveAll(dir)
	store, err := sqlstore.Open(ctx, "sqlite:"+filepath.Join(dir, "audit.db"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	a, _ := audit.New(store, &audit.Options{Levels: map[hints.Effect]audit.Level{hints.EffectDelete: audit.LevelFull}})

	call := audit.Call{Principal: "alice", Server: "files", Tool: "manage_files", Effect: hints.EffectDelete,
		Destructive: true, Decision: audit.Confirm, Reason: "deletes are confirmed", Approver: "alice",
		Arguments: json.RawMessage(`{"action":"delete","path":"notes.txt"}`)}
	e, err := a.Start(ctx, call)
	if errors.Is(err, audit.ErrUnavailable) {
		fmt.Println(err) // answer the client with it; do not forward
		return
	}
	// ... forward the call ...
	_ = e.End(ctx, audit.Ending{Outcome: audit.OutcomeOK})
	_ = a.Close(ctx)

	for r, err := range store.Query(ctx, audit.Filter{Effect: hints.EffectDelete}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(r.ID, r.Tool, r.Decision, r.Approver, r.Outcome, string(r.Args))
	}
	// Output:
	// 1 manage_files confirm alice ok {"action":"delete","path":"notes.txt"}
}
