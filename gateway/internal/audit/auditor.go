package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/requeststate"
)

// FailurePolicy says what becomes of a call that need not be audited
// durably when the store is unavailable.
type FailurePolicy string

// Failure policies.
const (
	// Proceed forwards the call and counts its record as dropped if it
	// cannot be written.
	Proceed FailurePolicy = "proceed"
	// FailClosed writes the record before forwarding the call, like a call
	// that must be audited, and refuses the call if it cannot.
	FailClosed FailurePolicy = "fail-closed"
)

// ParseFailurePolicy returns the policy named s.
func ParseFailurePolicy(s string) (FailurePolicy, error) {
	switch p := FailurePolicy(s); p {
	case Proceed, FailClosed:
		return p, nil
	}
	return "", fmt.Errorf("audit failure policy %q: want proceed or fail-closed", text.Clip(s, 40))
}

// Options configure an Auditor; nil means the defaults.
type Options struct {
	// Levels are the levels by effect. An effect left out, or the empty
	// effect, takes its default: read summary, write, external and delete
	// full.
	Levels map[hints.Effect]Level
	// OnUnavailable applies to the calls that need not be audited durably
	// (neither confirmed, nor destructive, nor deletes) when the store is
	// unavailable. Zero means Proceed.
	OnUnavailable FailurePolicy
	// WriteTimeout bounds each write to the store. Zero means 5s.
	WriteTimeout time.Duration
	// Buffer is how many records of ended calls may await a batched
	// write; more are dropped and counted. Zero means 1024.
	Buffer int
	// BatchSize is the most records written in one transaction. Zero
	// means 128.
	BatchSize int
	// Window is how long the writer gathers records after the first of a
	// batch before it writes them in one transaction (group commit), unless
	// BatchSize records come first. Zero means 2ms; negative writes what is
	// queued at once.
	Window time.Duration
	// MaxArgsBytes bounds the argument values recorded at LevelFull;
	// larger arguments are recorded by their digest only. Zero means
	// 16 KiB.
	MaxArgsBytes int
	// Logger receives dropped records and failed writes. Nil discards.
	Logger *slog.Logger
}

func (o *Options) withDefaults() (Options, error) {
	var c Options
	if o != nil {
		c = *o
	}
	levels := map[hints.Effect]Level{
		"": LevelFull, hints.EffectRead: LevelSummary, hints.EffectWrite: LevelFull,
		hints.EffectExternal: LevelFull, hints.EffectDelete: LevelFull,
	}
	for e, l := range c.Levels {
		if e != "" && e.Rank() < 0 {
			return c, fmt.Errorf("audit level for effect %q: want read, write, external or delete", text.Clip(string(e), 40))
		}
		if _, err := ParseLevel(string(l)); err != nil {
			return c, err
		}
		levels[e] = l
	}
	c.Levels = levels
	switch c.OnUnavailable {
	case "":
		c.OnUnavailable = Proceed
	case Proceed, FailClosed:
	default:
		return c, fmt.Errorf("audit failure policy %q: want proceed or fail-closed", text.Clip(string(c.OnUnavailable), 40))
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 5 * time.Second
	}
	if c.Buffer <= 0 {
		c.Buffer = 1024
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 128
	}
	if c.Window == 0 {
		c.Window = 2 * time.Millisecond
	}
	if c.MaxArgsBytes <= 0 {
		c.MaxArgsBytes = 16 << 10
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// Call describes a call as the gateway is about to forward it (or not).
type Call struct {
	Principal, Server, Tool string
	// SignedInAs is whose grant the upstream requests carried (Record).
	SignedInAs string
	// Effect and Destructive are the effective values for this call.
	Effect      hints.Effect
	Destructive bool
	Decision    Decision
	Reason      string
	Approver    string
	DryRun      bool
	// Arguments are the arguments as the client sent them.
	Arguments json.RawMessage
	// SensitiveArgs name arguments whose values are never recorded, at
	// any depth; so are those whose names look like credentials
	// (password, secret, token, api key, authorization, cookie, private
	// key, credential).
	SensitiveArgs []string
}

// MustAudit reports whether c is recorded durably before it is
// forwarded: a confirmed or destructive call, or a delete.
func (c *Call) MustAudit() bool {
	return c.Decision == Confirm || c.Destructive || c.Effect == hints.EffectDelete
}

// Ending is how a call ended.
type Ending struct {
	Outcome Outcome
	// Retries counts the retries upstream.
	Retries int
	// Redactions counts what was redacted from the result, by kind.
	Redactions map[string]int
	// Err is the error the call ended with, if any.
	Err error
}

// Stats count what an Auditor did, for metrics.
type Stats struct {
	// Written counts records written (a call begun durably counts once).
	Written uint64
	// Dropped counts records lost: the buffer was full, or a batched write
	// failed.
	Dropped uint64
	// Refused counts calls refused because the store was unavailable.
	Refused uint64
	// Unfinished counts outcomes that could not be recorded: those
	// records read as unknown.
	Unfinished uint64
}

// UnavailableError is returned by Auditor.Start when a call that must be
// audited could not be: the gateway must not forward it.
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string {
	return "audit store unavailable: " + text.Clip(e.Err.Error(), 300) + "; the call was not forwarded"
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// ErrUnavailable matches every UnavailableError.
var ErrUnavailable = errors.New("audit store unavailable")

// ErrEnded is returned by Entry.End for an entry already ended.
var ErrEnded = errors.New("audit: the call was already ended")

// Auditor records calls in a Store. Its methods are safe for concurrent
// use.
type Auditor struct {
	store Store
	opts  Options

	mu     sync.RWMutex // guards closed against sends on queue
	closed bool
	queue  chan *Record
	done   chan struct{}
	// stop cancels the writer's writes when Close gives up waiting.
	stopCtx context.Context
	stop    context.CancelFunc

	written, dropped, refused, unfinished atomic.Uint64
}

// New returns an Auditor writing to s. It starts one goroutine for
// batched writes; Close stops it.
func New(s Store, o *Options) (*Auditor, error) {
	opts, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	a := &Auditor{store: s, opts: opts, queue: make(chan *Record, opts.Buffer), done: make(chan struct{})}
	a.stopCtx, a.stop = context.WithCancel(context.Background())
	go a.writer()
	return a, nil
}

// Entry is a call being audited; End records how it ended.
type Entry struct {
	a     *Auditor
	rec   *Record // nil at LevelOff
	start time.Time
	begun bool
	ended atomic.Bool
}

// ID returns the record's ID if it was written when the call started,
// and 0 otherwise.
func (e *Entry) ID() int64 {
	if e.begun {
		return e.rec.ID
	}
	return 0
}

// Start records that c is about to be forwarded. A call that must be
// audited (see Call.MustAudit), or any call under FailClosed, is written
// durably before Start returns; if it cannot be, Start returns an
// *UnavailableError and the call must not be forwarded. If ctx ends
// first, Start returns ctx's error.
func (a *Auditor) Start(ctx context.Context, c Call) (*Entry, error) {
	e := &Entry{a: a, start: time.Now()}
	level := a.level(&c)
	if level == LevelOff {
		return e, nil
	}
	e.rec = a.record(&c, level, e.start)
	if !c.MustAudit() && a.opts.OnUnavailable != FailClosed {
		return e, nil
	}
	wctx, cancel := context.WithTimeout(ctx, a.opts.WriteTimeout)
	id, err := a.store.Begin(wctx, e.rec)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		a.refused.Add(1)
		a.opts.Logger.Warn("audit: refused a call, its record could not be written", "server", e.rec.Server, "tool", e.rec.Tool, "err", err)
		return nil, &UnavailableError{Err: err}
	}
	a.written.Add(1)
	e.rec.ID, e.begun = id, true
	return e, nil
}

// End records how the call ended. For a call written when it started,
// the outcome is written before End returns (an error means the record
// reads as unknown); for the others the record joins the batched writes.
func (e *Entry) End(ctx context.Context, en Ending) error {
	if !e.ended.CompareAndSwap(false, true) {
		return ErrEnded
	}
	if e.rec == nil {
		return nil
	}
	now := time.Now()
	e.a.ending(e.rec, en, now, now.Sub(e.start))
	if !e.begun {
		e.a.enqueue(e.rec)
		return nil
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.a.opts.WriteTimeout)
	defer cancel()
	if err := e.a.store.Finish(wctx, e.rec); err != nil {
		e.a.unfinished.Add(1)
		e.a.opts.Logger.Warn("audit: the outcome of a call could not be recorded; it reads as unknown", "id", e.rec.ID, "outcome", en.Outcome, "err", err)
		return fmt.Errorf("audit: recording the outcome of call %d: %w", e.rec.ID, err)
	}
	return nil
}

// Log records a call that ended without being forwarded (denied, declined,
// timed out, cancelled). One that must be audited is written before Log
// returns; the others join the batched writes.
func (a *Auditor) Log(ctx context.Context, c Call, en Ending) error {
	level := a.level(&c)
	if level == LevelOff {
		return nil
	}
	now := time.Now()
	r := a.record(&c, level, now)
	a.ending(r, en, now, 0)
	if !c.MustAudit() {
		a.enqueue(r)
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, a.opts.WriteTimeout)
	defer cancel()
	if err := a.store.Write(wctx, []*Record{r}); err != nil {
		a.dropped.Add(1)
		return fmt.Errorf("audit: recording a call that was not forwarded: %w", err)
	}
	a.written.Add(1)
	return nil
}

// Stats returns what the Auditor did so far.
func (a *Auditor) Stats() Stats {
	return Stats{Written: a.written.Load(), Dropped: a.dropped.Load(), Refused: a.refused.Load(), Unfinished: a.unfinished.Load()}
}

// Close writes the records awaiting a batched write and stops the
// Auditor's goroutine; records that cannot be written before ctx ends are
// dropped. It does not close the store. Calls started before Close may
// still End; their records are then written directly or dropped.
func (a *Auditor) Close(ctx context.Context) error {
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		close(a.queue)
	}
	a.mu.Unlock()
	select {
	case <-a.done:
		return nil
	case <-ctx.Done():
		a.stop() // the remaining writes fail at once and count as dropped
		<-a.done
		return ctx.Err()
	}
}

// level returns the level c is recorded at.
func (a *Auditor) level(c *Call) Level {
	l, ok := a.opts.Levels[c.Effect]
	if !ok {
		l = a.opts.Levels[""]
	}
	if l == LevelOff && c.MustAudit() {
		l = LevelSummary
	}
	return l
}

// record returns the record of c at level.
func (a *Auditor) record(c *Call, level Level, start time.Time) *Record {
	r := &Record{
		Time: start, Principal: c.Principal, Server: c.Server, Tool: c.Tool, SignedInAs: c.SignedInAs,
		Effect: c.Effect, Destructive: c.Destructive, Decision: c.Decision, Reason: c.Reason,
		Approver: c.Approver, DryRun: c.DryRun, Level: level,
	}
	if d, err := requeststate.ArgumentsDigest(c.Arguments); err == nil {
		r.ArgsDigest = d
	}
	if level == LevelFull {
		r.Args = recordedArgs(c.Arguments, c.SensitiveArgs, a.opts.MaxArgsBytes)
	}
	r.normalize()
	return r
}

// ending fills in how the call ended.
func (a *Auditor) ending(r *Record, en Ending, now time.Time, latency time.Duration) {
	r.Outcome, r.Ended, r.Latency, r.Retries, r.Redactions = en.Outcome, now, latency, en.Retries, en.Redactions
	if r.Outcome == "" {
		r.Outcome = OutcomeUnknown
	}
	r.Error = ""
	if en.Err != nil {
		r.Error = en.Err.Error()
	}
	r.normalize()
}

// enqueue hands r to the writer, or counts it dropped if the buffer is
// full; after Close it writes r directly.
func (a *Auditor) enqueue(r *Record) {
	a.mu.RLock()
	if !a.closed {
		select {
		case a.queue <- r:
			a.mu.RUnlock()
			return
		default:
			a.mu.RUnlock()
			a.dropped.Add(1)
			a.opts.Logger.Warn("audit: buffer full, a record was dropped", "server", r.Server, "tool", r.Tool)
			return
		}
	}
	a.mu.RUnlock()
	a.writeBatch([]*Record{r})
}

// writer writes queued records in batches until the queue is closed and
// drained.
func (a *Auditor) writer() {
	defer close(a.done)
	batch := make([]*Record, 0, a.opts.BatchSize)
	window := time.NewTimer(time.Hour)
	window.Stop()
	for r := range a.queue {
		batch = a.gather(append(batch[:0], r), window)
		a.writeBatch(batch)
	}
}

// gather adds queued records to batch until it holds BatchSize, the
// window has passed, the queue is closed or Close gives up.
func (a *Auditor) gather(batch []*Record, window *time.Timer) []*Record {
	if a.opts.Window > 0 {
		window.Reset(a.opts.Window)
		defer window.Stop()
	}
	for len(batch) < a.opts.BatchSize {
		select {
		case r, ok := <-a.queue:
			if !ok {
				return batch
			}
			batch = append(batch, r)
			continue
		default:
		}
		if a.opts.Window <= 0 {
			return batch
		}
		select {
		case r, ok := <-a.queue:
			if !ok {
				return batch
			}
			batch = append(batch, r)
		case <-window.C:
			return batch
		case <-a.stopCtx.Done():
			return batch
		}
	}
	return batch
}

func (a *Auditor) writeBatch(batch []*Record) {
	ctx, cancel := context.WithTimeout(a.stopCtx, a.opts.WriteTimeout)
	defer cancel()
	if err := a.store.Write(ctx, batch); err != nil {
		a.dropped.Add(uint64(len(batch)))
		a.opts.Logger.Warn("audit: records dropped, the store could not write them", "records", len(batch), "err", err)
		return
	}
	a.written.Add(uint64(len(batch)))
}
