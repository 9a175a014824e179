package fleet

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
	approvalsql "github.com/preflightmcp/preflight/gateway/internal/approval/sqlstore"
	"github.com/preflightmcp/preflight/gateway/internal/audit"
	auditsql "github.com/preflightmcp/preflight/gateway/internal/audit/sqlstore"
	"github.com/preflightmcp/preflight/gateway/internal/state"
)

// statePrefix is the Redis prefix of the replicas' shared state: the
// config's redis.prefix + "state:".
const statePrefix = "fleet:state:"

// Approvals returns an approval service on the fleet's shared stores (the
// PostgreSQL approvals table, notifications over its Redis), as another
// replica has it: what a person's decision on any replica's page does.
// It is closed when the test ends.
func (f *Fleet) Approvals() *approval.Service {
	t := f.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	store, err := approvalsql.Open(ctx, f.PostgresURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ropts, err := redis.ParseURL(f.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(ropts)
	st := state.NewRedis(client, &state.Options{Prefix: statePrefix})
	t.Cleanup(func() { st.Close(); client.Close() })
	return approval.New(store, &approval.Options{Notifier: approval.BusNotifier(st.Bus)})
}

// Audit returns the records of the shared audit log that f selects.
func (f *Fleet) Audit(ctx context.Context, filter audit.Filter) ([]*audit.Record, error) {
	s, err := auditsql.Open(ctx, f.PostgresURL, nil)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var out []*audit.Record
	for r, err := range s.Query(ctx, filter) {
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
