package approval_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/hints"
)

// The ask stage asks; a person approves on the page; the retry with the
// same arguments runs once.
func Example() {
	ctx := context.Background()
	s := approval.New(nil, nil)
	call := approval.Call{
		Principal: "alice", Server: "files", Tool: "manage_files",
		Arguments: json.RawMessage(`{"action":"delete","path":"notes.txt"}`),
		Effect:    hints.EffectDelete, Reason: "deletes a file", Matter: []string{"action", "path"},
	}
	r, _ := s.Ask(ctx, call)
	fmt.Println(r.State, r.Args)

	// On the page, signed in as alice:
	if _, err := s.Approve(ctx, r.ID, approval.Approver{Principal: "alice"}); err != nil {
		fmt.Println(err)
	}

	r, _ = s.Ask(ctx, call) // the client's retry
	fmt.Println(r.State, "approved by", r.DecidedBy)
	r, _ = s.Ask(ctx, call) // once only
	fmt.Println(r.State)
	// Output:
	// pending [{action delete false false []} {path notes.txt false false []}]
	// used approved by alice
	// pending
}

// A client that declared elicitation.url gets the page's address in
// input_required.
func ExampleURLElicitation() {
	s := approval.New(nil, nil)
	r, _ := s.Ask(context.Background(), approval.Call{
		Server: "files", Tool: "manage_files", Arguments: json.RawMessage(`{"action":"delete"}`), Reason: "deletes a file",
	})
	p, _ := approval.URLElicitation("http://127.0.0.1:8787", r)
	fmt.Println(p.Mode)
	fmt.Println(p.URL == "http://127.0.0.1:8787/approvals/"+r.ID)
	fmt.Println(p.Message)
	// Output:
	// url
	// true
	// This call needs a person's approval before it runs: manage_files on files (deletes a file). Open the page, sign in, and approve or deny it; the call continues once it is decided.
}
