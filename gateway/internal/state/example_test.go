package state_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/state"
	"github.com/preflightmcp/preflight/requeststate"
)

// A confirmation answered once: the gateway issues a nonce when it asks
// and seals it into the requestState; when the answer comes back, on any
// replica, the first Use forwards the call and a replay is refused.
func Example() {
	st := state.NewMemory(nil) // state.NewRedis(client, opts) for replicas
	defer st.Close()
	ctx := context.Background()

	nonce, err := st.Nonces.Issue(ctx)
	if err != nil {
		fmt.Println(err) // Redis is away: do not ask, fail the call
		return
	}
	// ... seal nonce into the requestState, answer input_required ...

	for range 2 { // the answer, then the same answer replayed
		first, err := st.Nonces.Use(ctx, nonce, requeststate.DefaultTTL+requeststate.DefaultSkew)
		switch {
		case errors.Is(err, state.ErrUnavailable):
			fmt.Println(err) // fail closed, with the message
		case err != nil:
			fmt.Println("refused:", err) // a stale epoch: as invalid state
		case !first:
			fmt.Println("replayed: refused")
		default:
			fmt.Println("confirmed: forwarded")
		}
	}
	// Output:
	// confirmed: forwarded
	// replayed: refused
}

// A call waits for an approval that the page of any replica may give: the
// page records the approval in the approvals store, then publishes on the
// call's topic; the replica holding the call re-reads the store on each
// message. Wait subscribes before its first check, so an approval given
// at any moment is seen.
func ExampleWait() {
	st := state.NewMemory(nil)
	defer st.Close()
	ctx := context.Background()

	var mu sync.Mutex
	approved := map[string]bool{} // the approvals store (PostgreSQL in a fleet)

	go func() { // the page, on another replica
		mu.Lock()
		approved["call-42"] = true
		mu.Unlock()
		_ = st.Bus.Publish(ctx, "approval:call-42", nil)
	}()

	err := state.Wait(ctx, st.Bus, "approval:call-42", func() (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return approved["call-42"], nil
	})
	fmt.Println("released:", err == nil)
	// Output: released: true
}

// Five calls a minute per principal, with bursts of two.
func ExampleLimiter() {
	st := state.NewMemory(nil)
	defer st.Close()
	limit := state.Limit{Rate: 5.0 / 60, Burst: 2}
	for range 3 {
		ok, retryAfter, err := st.Limiter.Allow(context.Background(), "principal:alice", limit)
		if err != nil {
			fmt.Println(err) // refuse the call
			return
		}
		fmt.Println(ok, retryAfter.Round(time.Second))
	}
	// Output:
	// true 0s
	// true 0s
	// false 12s
}
