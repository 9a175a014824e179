package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/requeststate"
)

// Options configure a Service; nil means the defaults.
type Options struct {
	// TTL is how long a request waits for a decision. Zero means ten
	// minutes.
	TTL time.Duration
	// UseWindow is how long an approval waits for the retry it allows.
	// Zero means five minutes.
	UseWindow time.Duration
	// Admins are the principals who may decide any principal's requests.
	// Empty (the default): an approver decides only the requests of
	// their own principal.
	Admins []string
	// Notifier carries decisions to the replicas whose calls wait on
	// them. Nil means an in-process one: right for one replica.
	Notifier Notifier
	// Recheck is the longest a waiting call goes without reading the
	// store, in case a notification was lost. Zero means five seconds.
	Recheck time.Duration
	// ShowBytes bounds the arguments, as sent, of a call that can be
	// approved: the page shows them whole. Zero means DefaultShowBytes.
	ShowBytes int
	// Logger receives lost notifications and failed publications. Nil
	// discards.
	Logger *slog.Logger
}

// Service holds the calls that wait for approval. It is safe for
// concurrent use; several Services (replicas) may share a Store and a
// Notifier.
type Service struct {
	store Store
	opts  Options
	hub   *hub
}

// New returns a Service keeping requests in s (nil means a new MemStore
// with its defaults).
func New(s Store, o *Options) *Service {
	var opts Options
	if o != nil {
		opts = *o
	}
	if s == nil {
		s = NewMemStore(nil)
	}
	if opts.TTL <= 0 {
		opts.TTL = 10 * time.Minute
	}
	if opts.UseWindow <= 0 {
		opts.UseWindow = 5 * time.Minute
	}
	if opts.Notifier == nil {
		opts.Notifier = NewLocalNotifier()
	}
	if opts.Recheck <= 0 {
		opts.Recheck = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.Admins = slices.Clone(opts.Admins)
	return &Service{store: s, opts: opts, hub: &hub{
		bus: opts.Notifier, recheck: opts.Recheck, log: opts.Logger, waiters: map[string]map[*waiter]struct{}{},
	}}
}

// Call is a call that needs a person's approval, as the gateway's ask
// stage knows it.
type Call struct {
	Principal, Server, Tool string
	// Arguments are the call's arguments as the client sent them.
	Arguments json.RawMessage
	// Effect is the call's effect; Reason says why it is asked.
	Effect hints.Effect
	Reason string
	// Matter names the arguments to show first (those a resolver or a
	// rule looked at); the others follow.
	Matter []string
	// Sensitive names arguments whose values are never shown, beyond
	// those whose names look like credentials.
	Sensitive []string
}

// key returns the call's key, its arguments digested.
func (c *Call) key() (Key, error) {
	k := Key{Principal: c.Principal, Server: c.Server, Tool: c.Tool}
	if err := checkKey(k); err != nil {
		return Key{}, err
	}
	d, err := requeststate.ArgumentsDigest(c.Arguments)
	if err != nil {
		return Key{}, fmt.Errorf("approval: %w", err)
	}
	k.ArgsDigest = d
	return k, nil
}

// Ask is what the ask stage calls for a call that needs approval. It
// returns the call's request:
//
//   - Used: an approval for this very call (same principal, server, tool
//     and arguments) was waiting and this call has just consumed it: run
//     the call (DecidedBy is the approver to audit);
//   - Denied: a person denied it; do not run it ([OutcomeText]). A denial
//     answers the call's retries until the request would have expired;
//     a retry after that asks anew;
//   - Pending: a new or earlier request awaits a decision: tell the
//     client where to approve ([URLElicitation], [RetryText]) or [Wait].
//
// Invalid JSON arguments are an error, as is ErrFull, and arguments the
// page cannot show whole are a [NotShowableError]: such a call cannot be
// approved there.
func (s *Service) Ask(ctx context.Context, c Call) (*Request, error) {
	k, err := c.key()
	if err != nil {
		return nil, err
	}
	args, err := Show(c.Arguments, c.Matter, c.Sensitive, s.opts.ShowBytes)
	switch {
	case errors.Is(err, ErrNotShowable):
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("approval: %w", err)
	}
	for range 3 { // an approval another retry consumed first: open anew
		now := time.Now()
		fresh := &Request{
			ID: newID(), Key: k, Effect: hints.Effect(firstClean(string(c.Effect), 32)),
			Reason: firstClean(c.Reason, maxReasonBytes), Args: args,
			State: Pending, Created: now, Expires: now.Add(s.opts.TTL),
		}
		r, _, err := s.store.Open(ctx, fresh, now)
		if err != nil {
			return nil, err
		}
		if r.State != Approved {
			return r, nil
		}
		used, err := s.store.Consume(ctx, r.ID, now)
		if err == nil {
			return used, nil
		}
		if !errors.Is(err, ErrUsed) && !errors.Is(err, ErrExpired) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("approval: %w: the approval was used concurrently, try again", ErrUsed)
}

// Resume is what the ask stage calls when a client retries with the id of
// a request it was given (sealed in its requestState by the gateway, for
// URL-mode elicitation). It waits up to wait (within ctx) for a decision,
// then returns the request: Used (approved and consumed now: run the
// call), Pending, Denied or Expired. A forged or unknown id is
// ErrNotFound; an id bound to another call (principal, server, tool or
// arguments) is ErrMismatch; a replayed one whose approval was used is
// ErrUsed.
func (s *Service) Resume(ctx context.Context, id string, c Call, wait time.Duration) (*Request, error) {
	if !ValidID(id) {
		return nil, ErrNotFound
	}
	k, err := c.key()
	if err != nil {
		return nil, err
	}
	r, err := s.store.Get(ctx, id, time.Now())
	if err != nil {
		return nil, err
	}
	if r.Key != k {
		return nil, ErrMismatch
	}
	if r.State == Pending && wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, wait)
		r, err = s.Wait(wctx, id)
		cancel()
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if r == nil {
			return nil, err
		}
	}
	switch r.State {
	case Approved:
		used, err := s.store.Consume(ctx, id, time.Now())
		switch {
		case errors.Is(err, ErrExpired):
			return used, nil // lapsed in the meantime: State is Expired
		case err != nil:
			return nil, err
		}
		return used, nil
	case Used:
		return nil, ErrUsed
	}
	return r, nil
}

// Wait blocks until request id is no longer pending, or ctx ends (then it
// returns the request as last read and ctx's error). It subscribes before
// reading the store, so a decision made meanwhile is seen, and reads the
// store again on each notification of id, at expiry, and every
// Options.Recheck.
func (s *Service) Wait(ctx context.Context, id string) (*Request, error) {
	if !ValidID(id) {
		return nil, ErrNotFound
	}
	w := s.hub.add(id)
	defer s.hub.remove(w)
	recheck := time.NewTimer(s.opts.Recheck)
	defer recheck.Stop()
	for {
		now := time.Now()
		s.hub.ensure(now)
		r, err := s.store.Get(ctx, id, now)
		if err != nil {
			return nil, err
		}
		if r.State != Pending {
			return r, nil
		}
		expiry := time.NewTimer(r.Expires.Sub(now))
		recheck.Reset(s.opts.Recheck)
		select {
		case <-w.wake:
		case <-expiry.C:
		case <-recheck.C:
		case <-ctx.Done():
			expiry.Stop()
			return r, ctx.Err()
		}
		expiry.Stop()
	}
}

// Approve approves request id on behalf of by, who must be the request's
// principal or an admin (ErrForbidden otherwise; ErrNotFound for an id
// that by may not see). The approval allows one retry within UseWindow.
// A request decided already is ErrNotPending, with the request; one whose
// arguments are not shown whole (kept from an older version) is
// ErrNotShowable.
func (s *Service) Approve(ctx context.Context, id string, by Approver) (*Request, error) {
	return s.decide(ctx, id, by, true)
}

// Deny denies request id on behalf of by, under Approve's rules.
func (s *Service) Deny(ctx context.Context, id string, by Approver) (*Request, error) {
	return s.decide(ctx, id, by, false)
}

func (s *Service) decide(ctx context.Context, id string, by Approver, approve bool) (*Request, error) {
	if !ValidID(id) {
		return nil, ErrNotFound
	}
	now := time.Now()
	r, err := s.store.Get(ctx, id, now)
	if err != nil {
		return nil, err
	}
	if !s.MayDecide(by.Principal, r) {
		return nil, ErrForbidden
	}
	if approve && !r.Whole() {
		return r, ErrNotShowable
	}
	by.Name = firstClean(by.Name, maxNameBytes)
	r, err = s.store.Decide(ctx, id, Decision{Approve: approve, By: by, At: now, UseBy: now.Add(s.opts.UseWindow)})
	if err != nil {
		return r, err
	}
	if err := s.opts.Notifier.Publish(ctx, Topic, []byte(id)); err != nil {
		s.opts.Logger.Warn("approval decision not published; waiting calls see it at their next recheck",
			"id", id, "err", err, "recheck", s.opts.Recheck)
	}
	return r, nil
}

// MayDecide reports whether principal may decide r: it is r's principal,
// or an admin.
func (s *Service) MayDecide(principal string, r *Request) bool {
	return r.Principal == principal || s.isAdmin(principal)
}

func (s *Service) isAdmin(principal string) bool { return slices.Contains(s.opts.Admins, principal) }

// Get returns request id if viewer may decide it, and ErrNotFound
// otherwise: a request of another principal is not disclosed.
func (s *Service) Get(ctx context.Context, id, viewer string) (*Request, error) {
	if !ValidID(id) {
		return nil, ErrNotFound
	}
	r, err := s.store.Get(ctx, id, time.Now())
	if err != nil {
		return nil, err
	}
	if !s.MayDecide(viewer, r) {
		return nil, ErrNotFound
	}
	return r, nil
}

// List returns the requests viewer may decide (an admin's: everyone's),
// newest first, at most limit (zero: 200).
func (s *Service) List(ctx context.Context, viewer string, limit int) ([]*Request, error) {
	if limit <= 0 {
		limit = 200
	}
	return s.store.List(ctx, ListFilter{Principal: viewer, All: s.isAdmin(viewer), Limit: limit}, time.Now())
}

// maxKeyBytes bounds each name of a key. Names are kept exactly as given
// (two principals must never be confused); the page escapes them.
const maxKeyBytes = 1024

// checkKey refuses names that are too long or not UTF-8.
func checkKey(k Key) error {
	for _, f := range []struct{ what, v string }{{"principal", k.Principal}, {"server", k.Server}, {"tool", k.Tool}} {
		if len(f.v) > maxKeyBytes || !utf8.ValidString(f.v) {
			return fmt.Errorf("approval: %s is not UTF-8 text of at most %d bytes", f.what, maxKeyBytes)
		}
	}
	return nil
}

// firstClean is s escaped and cut to max bytes ([text.EscapeCut]).
func firstClean(s string, max int) string {
	c, _ := text.EscapeCut(s, max)
	return c
}
