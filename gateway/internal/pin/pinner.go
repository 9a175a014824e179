package pin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Mode is how a server's tool definitions are pinned.
type Mode string

// The modes, as the gateway's config names them (config.Pin).
const (
	// ModeStrict: any change quarantines the tool until approved, and so
	// does a tool first seen after the server's first listing (a new or
	// renamed tool).
	ModeStrict Mode = "strict"
	// ModeWarn: a change that removes caution quarantines the tool; one
	// that only adds caution is accepted and becomes the pin; any other is
	// logged, and the tool stays listed as served and callable until
	// someone approves it. A new tool is pinned at first sight.
	ModeWarn Mode = "warn"
	// ModeOff: nothing is pinned or checked.
	ModeOff Mode = "off"
)

// MetaQuarantined is the _meta key of a quarantined tool's listing:
// {"changed": [fields], "pinned": fingerprint, "pending": fingerprint,
// "since": RFC 3339 time}.
const MetaQuarantined = "preflight/quarantined"

// Defaults of [Options].
const (
	DefaultRefresh  = time.Second
	DefaultMaxTools = 10_000
)

// Options configure a [Pinner]; nil means every default.
type Options struct {
	// Mode returns the mode of a server. Nil means ModeStrict for every
	// server; an unknown mode counts as ModeStrict.
	Mode func(server string) Mode
	// Refresh is how long a Pinner trusts what it read from the store
	// before reading it again, so that an approval or a quarantine by
	// another replica is seen. Zero means DefaultRefresh.
	Refresh time.Duration
	// MaxTools bounds the tools of one Check. Zero means DefaultMaxTools.
	MaxTools int
	// Logger receives a record of every pin, change, quarantine and
	// approval. Nil means none.
	Logger *slog.Logger
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
	// Store is the store as "preflight pins -store" takes it, named in
	// the error of a quarantined tool's call so that the operator can run
	// the command as it stands (with no password: the message goes to
	// clients). Empty leaves naming the store to the operator.
	Store string
}

// Pinner pins the tool definitions each upstream serves and holds back
// those that changed. It is safe for concurrent use.
type Pinner struct {
	store   Store
	mode    func(string) Mode
	refresh time.Duration
	max     int
	log     *slog.Logger
	now     func() time.Time
	spec    string // Options.Store

	mu      sync.RWMutex
	servers map[string]*serverPins
}

// serverPins is what a Pinner knows of one server's pins.
type serverPins struct {
	check sync.Mutex // one Check or Approve of the server at a time
	// memo holds the definitions of the last list, by tool name, with
	// their memoKey; guarded by check.
	memo map[string]memoized
	// listing says whether the server's first listing is behind it;
	// guarded by check.
	listing listing

	mu     sync.RWMutex
	loaded time.Time // when the whole list was last read
	tools  map[string]*entry
}

// listing is what a Pinner knows of a server's first listing.
type listing int8

const (
	listingUnknown listing = iota // not asked of the store yet
	listingFirst                  // this process checks the first listing
	listingBefore                 // the first listing was checked before
)

type memoized struct {
	key [32]byte
	def *Definition
}

// entry is one tool's record as last read or written.
type entry struct {
	rec        *Record // nil: the store holds none
	at         time.Time
	refreshing atomic.Bool
	diff       *Diff // of rec.Pinned and rec.Pending, computed once
}

// New returns a Pinner over store.
func New(store Store, opts *Options) *Pinner {
	var o Options
	if opts != nil {
		o = *opts
	}
	p := &Pinner{store: store, mode: o.Mode, refresh: o.Refresh, max: o.MaxTools, log: o.Logger, now: o.Now, spec: o.Store, servers: map[string]*serverPins{}}
	if p.mode == nil {
		p.mode = func(string) Mode { return ModeStrict }
	}
	if p.refresh <= 0 {
		p.refresh = DefaultRefresh
	}
	if p.max <= 0 {
		p.max = DefaultMaxTools
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.now == nil {
		p.now = time.Now
	}
	return p
}

// Refresh returns how long p trusts what it read from the store
// (Options.Refresh).
func (p *Pinner) Refresh() time.Duration { return p.refresh }

// Mode returns server's mode, as Options.Mode gives it (an unknown mode
// is ModeStrict).
func (p *Pinner) Mode(server string) Mode { return p.modeOf(server) }

func (p *Pinner) modeOf(server string) Mode {
	switch m := p.mode(server); m {
	case ModeWarn, ModeOff:
		return m
	}
	return ModeStrict
}

func (p *Pinner) server(name string) *serverPins {
	p.mu.RLock()
	s := p.servers[name]
	p.mu.RUnlock()
	if s != nil {
		return s
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if s = p.servers[name]; s == nil {
		s = &serverPins{tools: map[string]*entry{}}
		p.servers[name] = s
	}
	return s
}

// Event is what a Check did to one tool.
type Event string

// The events of a Check.
const (
	EventNone        Event = ""            // nothing new
	EventPinned      Event = "pinned"      // first sight: the definition is pinned
	EventChanged     Event = "changed"     // a new change, listed and callable (warn)
	EventQuarantined Event = "quarantined" // a new change, quarantined
	EventAccepted    Event = "accepted"    // a change that only adds caution, or a new tool, became the pin (warn)
	EventReleased    Event = "released"    // the upstream serves the pinned definition again
	// EventNew: a tool first seen after its server's first listing (new,
	// or renamed), quarantined until approved (strict).
	EventNew Event = "new"
)

// Verdict is a Check's answer for one tool.
type Verdict struct {
	// Name is the tool's name as the upstream lists it.
	Name string
	// State is the tool's state after the check; "" in ModeOff.
	State State
	// Event is what this check changed, if anything.
	Event Event
	// Fingerprint is that of the definition the upstream serves.
	Fingerprint string
	// Diff is what changed from the pinned definition, when the upstream
	// serves another one.
	Diff *Diff
	// Serve is what to list: the upstream's tool, or, when quarantined,
	// a stand-in made of the pinned definition only (see [Quarantined]).
	Serve *mcp.Tool
}

// Verdicts are a Check's answers, in the order of the tools checked.
type Verdicts []Verdict

// Tools returns the tools to list, in order.
func (vs Verdicts) Tools() []*mcp.Tool {
	out := make([]*mcp.Tool, len(vs))
	for i, v := range vs {
		out[i] = v.Serve
	}
	return out
}

// Changed reports whether a verdict's state changed in this check (the
// listing a client sees may have: notify tools/list_changed).
func (vs Verdicts) Changed() bool {
	for _, v := range vs {
		if v.Event != EventNone && v.Event != EventPinned {
			return true
		}
	}
	return false
}

// Check compares the tools an upstream server lists with their pins, as
// the server's mode says: it pins the tools of the server's first listing
// ever (trust on first use, remembered in the store), quarantines (strict)
// or pins (warn) tools first seen later, and quarantines, logs or accepts
// those that changed. Call it on every
// tools/list of the upstream, before listing its tools, and list
// Verdicts.Tools. It fails when the store does (then nothing is known of
// the pins, and the caller should not list the server's tools), and for a
// list with more than Options.MaxTools tools, a name twice, or a tool
// whose definition does not encode as JSON.
func (p *Pinner) Check(ctx context.Context, server string, tools []*mcp.Tool) (Verdicts, error) {
	mode := p.modeOf(server)
	out := make(Verdicts, len(tools))
	if mode == ModeOff {
		for i, t := range tools {
			out[i] = Verdict{Name: t.Name, Serve: t}
		}
		return out, nil
	}
	if len(tools) > p.max {
		return nil, fmt.Errorf("pin: server %q lists %d tools, more than %d", clean(server, maxValue), len(tools), p.max)
	}
	s := p.server(server)
	s.check.Lock()
	defer s.check.Unlock()

	now := p.now()
	if now.Sub(s.loadedAt()) >= p.refresh {
		recs, err := p.store.List(ctx, server)
		if err != nil {
			return nil, fmt.Errorf("pin: reading the pins of %q: %w", clean(server, maxValue), err)
		}
		s.replace(recs, now)
	}
	first, err := p.firstListing(ctx, s, server, now)
	if err != nil {
		return nil, err
	}
	memo := make(map[string]memoized, len(tools))
	for i, t := range tools {
		if _, dup := memo[t.Name]; dup {
			return nil, fmt.Errorf("pin: server %q lists tool %q twice", clean(server, maxValue), clean(t.Name, maxValue))
		}
		key := memoKey(t)
		m, ok := s.memo[t.Name]
		if !ok || m.key != key {
			def, err := Define(t)
			if err != nil {
				// A tool the gateway cannot fingerprint cannot be
				// pinned: the list is refused rather than served
				// unchecked.
				return nil, err
			}
			m = memoized{key, def}
		}
		memo[t.Name] = m
		v, err := p.checkOne(ctx, s, server, mode, t, m.def, first, now)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	s.memo = memo
	s.listing = listingBefore // the first listing is pinned whole
	return out, nil
}

// firstListing reports whether this check is of server's first listing
// ever, asking the store once per process; s.check is held. A store that
// holds pins of the server from before it recorded listings has seen one.
func (p *Pinner) firstListing(ctx context.Context, s *serverPins, server string, now time.Time) (bool, error) {
	if s.listing == listingUnknown {
		first, err := p.store.Listed(ctx, server, now)
		if err != nil {
			return false, fmt.Errorf("pin: recording the listing of %q: %w", clean(server, maxValue), err)
		}
		s.listing = listingBefore
		if first && !s.hasRecords() {
			s.listing = listingFirst
		}
	}
	return s.listing == listingFirst, nil
}

func (s *serverPins) hasRecords() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, e := range s.tools {
		if e.rec != nil {
			return true
		}
	}
	return false
}

func (s *serverPins) loadedAt() time.Time {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.loaded
}

// replace installs a fresh list of the server's records.
func (s *serverPins) replace(recs []*Record, now time.Time) {
	tools := make(map[string]*entry, len(recs))
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		e := &entry{rec: r, at: now}
		if old := s.tools[r.Tool]; old != nil && old.rec != nil && samePending(old.rec, r) {
			e.diff = old.diff
		}
		tools[r.Tool] = e
	}
	s.tools, s.loaded = tools, now
}

func (s *serverPins) get(tool string) *entry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.tools[tool]
}

func (s *serverPins) put(r *Record, now time.Time, d *Diff) *entry {
	e := &entry{rec: r, at: now, diff: d}
	s.mu.Lock()
	s.tools[r.Tool] = e
	s.mu.Unlock()
	return e
}

func samePending(a, b *Record) bool {
	return a.Pinned.Fingerprint() == b.Pinned.Fingerprint() &&
		(a.Pending == nil) == (b.Pending == nil) &&
		(a.Pending == nil || a.Pending.Fingerprint() == b.Pending.Fingerprint())
}

// checkOne decides one tool; s.check is held. A tool nothing is pinned of
// is pinned at first sight in the server's first listing and in warn
// mode; in strict mode a later one is pinned as a NewToolPin, which the
// definition it serves then differs from.
func (p *Pinner) checkOne(ctx context.Context, s *serverPins, server string, mode Mode, t *mcp.Tool, def *Definition, first bool, now time.Time) (Verdict, error) {
	v := Verdict{Name: t.Name, Serve: t}
	var err error
	v.Fingerprint = def.Fingerprint()
	e := s.get(t.Name)
	if e == nil || e.rec == nil {
		pinned := def
		if !first && mode == ModeStrict {
			pinned = NewToolPin(t.Name)
		}
		r, err := p.store.Pin(ctx, server, pinned, now)
		if err != nil {
			return v, fmt.Errorf("pin: pinning %q of %q: %w", clean(t.Name, maxValue), clean(server, maxValue), err)
		}
		e = s.put(r, now, nil)
		if r.Pinned.Fingerprint() == def.Fingerprint() && r.Pending == nil {
			v.State, v.Event = StatePinned, EventPinned
			p.log.Info("pin: pinned at first sight", "server", server, "tool", t.Name, "fingerprint", v.Fingerprint)
			return v, nil
		}
		if first && r.Pinned.NewTool() {
			// Another replica, which saw this server's first listing
			// recorded before this one pinned its tools, took the tool
			// for new: it is part of the first listing, so its definition
			// is pinned as first seen.
			fail := func(what string, err error) (Verdict, error) {
				return v, fmt.Errorf("pin: %s %q of %q: %w", what, clean(t.Name, maxValue), clean(server, maxValue), err)
			}
			v, err = p.accept(ctx, s, server, def, r, "", v, fail, now)
			if !errors.Is(err, ErrConflict) {
				v.Serve = t
				return v, err
			}
			e = s.get(t.Name)
		}
		// Another replica pinned it first, maybe with another definition.
	}
	// A decision is written only if the pin it was made against is still
	// the store's; otherwise it is made again against the store's record.
	for range 3 {
		v, err = p.decide(ctx, s, server, mode, def, e, now)
		if v.Serve == nil {
			v.Serve = t
		}
		if !errors.Is(err, ErrConflict) {
			return v, err
		}
		e = s.get(t.Name)
	}
	return v, fmt.Errorf("pin: %q of %q: the pin keeps changing: %w", clean(t.Name, maxValue), clean(server, maxValue), err)
}

// decide compares def with the pin in e and records what follows. It
// returns ErrConflict, with the store's record cached, when the pin
// changed in the store meanwhile.
func (p *Pinner) decide(ctx context.Context, s *serverPins, server string, mode Mode, def *Definition, e *entry, now time.Time) (Verdict, error) {
	name := def.Name
	v := Verdict{Name: name, Fingerprint: def.Fingerprint()}
	r := e.rec
	fail := func(what string, err error) (Verdict, error) {
		if errors.Is(err, ErrConflict) && r != nil {
			s.put(r, now, nil)
			return v, err
		}
		return v, fmt.Errorf("pin: %s %q of %q: %w", what, clean(name, maxValue), clean(server, maxValue), err)
	}

	if r.Pinned.Fingerprint() == def.Fingerprint() {
		v.State = StatePinned
		if r.State == StatePinned {
			return v, nil
		}
		var err error
		if r, err = p.store.Quarantine(ctx, server, name, def.Fingerprint(), StatePinned, nil, now); err != nil {
			return fail("releasing", err)
		}
		s.put(r, now, nil)
		v.Event = EventReleased
		p.log.Info("pin: serves its pinned definition again", "server", server, "tool", name, "fingerprint", v.Fingerprint)
		return v, nil
	}

	d := e.diff
	if d == nil || r.Pending == nil || r.Pending.Fingerprint() != def.Fingerprint() {
		d = Compare(r.Pinned, def)
	}
	v.Diff = d
	pinned := r.Pinned.Fingerprint()
	want := StateChanged
	switch {
	case mode == ModeStrict:
		want = StateQuarantined
	case d.New:
		// Warn mode pins a new tool at first sight, as if it had been
		// first seen in warn mode.
		return p.accept(ctx, s, server, def, r, "", v, fail, now)
	case d.Class == RemovesCaution:
		want = StateQuarantined
	case d.Class == AddsCaution:
		// Warn mode accepts what only adds caution: it becomes the pin.
		return p.accept(ctx, s, server, def, r, AutoApprover, v, fail, now)
	}
	v.State = want
	if r.State == want && r.Pending != nil && r.Pending.Fingerprint() == def.Fingerprint() {
		// Known already: nothing to write or log.
		if e.diff == nil {
			s.put(r, e.at, d)
		}
	} else {
		var err error
		if r, err = p.store.Quarantine(ctx, server, name, pinned, want, def, now); err != nil {
			return fail("quarantining", err)
		}
		s.put(r, now, d)
		if want == StateQuarantined && d.New {
			v.Event = EventNew
			p.log.Warn("pin: quarantined a tool first seen after its server's first listing", "server", server, "tool", name,
				"pending", v.Fingerprint, "mode", string(mode))
		} else if want == StateQuarantined {
			v.Event = EventQuarantined
			p.log.Warn("pin: quarantined a tool whose definition changed", "server", server, "tool", name,
				"pinned", pinned, "pending", v.Fingerprint, "changed", d.Summary(), "mode", string(mode))
		} else {
			v.Event = EventChanged
			p.log.Warn("pin: a tool's definition changed; it stays callable until approved", "server", server, "tool", name,
				"pinned", pinned, "pending", v.Fingerprint, "changed", d.Summary(), "mode", string(mode))
		}
	}
	if want == StateQuarantined {
		v.Serve = Quarantined(r.Pinned, def, d, r.PendingSince, now)
	}
	return v, nil
}

// accept makes def the pin of its tool by itself (warn mode), approved by
// approver ("" for first sight), and returns the verdict; ErrConflict
// when another replica recorded or approved something else meanwhile.
func (p *Pinner) accept(ctx context.Context, s *serverPins, server string, def *Definition, r *Record, approver string,
	v Verdict, fail func(string, error) (Verdict, error), now time.Time) (Verdict, error) {
	name := def.Name
	var err error
	if r, err = p.store.Quarantine(ctx, server, name, r.Pinned.Fingerprint(), StateChanged, def, now); err != nil {
		if errors.Is(err, ErrConflict) && r != nil {
			s.put(r, now, nil) // the store's record, to decide against again
			return v, err
		}
		return fail("recording", err)
	}
	if r, err = p.store.Approve(ctx, server, name, def.Fingerprint(), approver, now); err != nil {
		if errors.Is(err, ErrStale) || errors.Is(err, ErrNothingPending) {
			// Decide again against the store's record.
			if r, err = p.store.Get(ctx, server, name); err == nil {
				s.put(r, now, nil)
				return v, ErrConflict
			}
		}
		return fail("accepting", err)
	}
	s.put(r, now, nil)
	v.State, v.Event = StatePinned, EventAccepted
	if approver == "" {
		p.log.Info("pin: pinned a new tool at first sight", "server", server, "tool", name, "fingerprint", v.Fingerprint)
	} else {
		p.log.Info("pin: accepted a change that only adds caution", "server", server, "tool", name,
			"fingerprint", v.Fingerprint, "changed", v.Diff.Summary())
	}
	return v, nil
}

// Quarantined returns the listing of a quarantined tool: its pinned
// (approved) definition, never the changed one, whose text has not been
// approved and may be what the change is about; its description starts by
// saying it is quarantined, and _meta[MetaQuarantined] says what changed.
// A new tool (a NewToolPin) is listed by its name alone, with an empty
// object schema and no annotations (a client assumes the most caution).
func Quarantined(pinned, pending *Definition, d *Diff, since, now time.Time) *mcp.Tool {
	t := pinned.Tool()
	if since.IsZero() {
		since = now
	}
	if d.New {
		t.Description = "[Quarantined by the gateway: this tool is new (first listed after its server's first listing); " +
			"its definition awaits an operator's approval and calls are refused until then.]"
	} else {
		t.Description = "[Quarantined by the gateway: this tool's definition changed (" + d.Summary() +
			") and awaits an operator's approval; calls are refused until then.] " + t.Description
	}
	meta := map[string]any{}
	for k, v := range t.Meta {
		meta[k] = v
	}
	q := map[string]any{
		"changed": d.Fields(),
		"pinned":  pinned.Fingerprint(),
		"pending": pending.Fingerprint(),
		"since":   since.UTC().Format(time.RFC3339),
	}
	if d.New {
		q["new"] = true
	}
	meta[MetaQuarantined] = q
	t.Meta = meta
	return t
}

// ErrQuarantined is matched by the error of a call to a quarantined tool
// (errors.Is).
var ErrQuarantined = errors.New("pin: tool quarantined")

// QuarantinedError refuses a call to a quarantined tool. Its message says
// what changed and how to approve it; it holds no server text other than
// bounded, escaped field names and values.
type QuarantinedError struct {
	Server, Tool string
	// Pinned and Pending are the fingerprints of the approved definition
	// and of the one the upstream serves now.
	Pinned, Pending string
	// Since is when the change was first seen.
	Since time.Time
	// Changed names what changed, as Diff.Summary does.
	Changed string
	// Store is the pin store to name to preflight pins (Options.Store),
	// "" when unknown.
	Store string
	// New reports a tool first seen after its server's first listing:
	// nothing of it was ever approved.
	New bool
}

func (e *QuarantinedError) Error() string {
	cmd, where := "preflight pins", " (naming the gateway's pin store with -store, or its configuration file with -config)"
	if e.Store != "" {
		cmd, where = "preflight pins -store "+quoteWord(clean(e.Store, maxStore)), ""
	}
	why := fmt.Sprintf("its definition changed since it was approved (%s)", e.Changed)
	if e.New {
		why = "it is new (first listed after the server's first listing) and nobody approved it yet"
	}
	approve := fmt.Sprintf(" and approve it with '%s approve %s %s %s'", cmd, shellWord(e.Server), shellWord(e.Tool), e.Pending)
	if e.Pending == "" {
		approve = "; it can be approved once the server lists it again"
	}
	return fmt.Sprintf("tool %q of server %q is quarantined: %s, "+
		"and the call was not sent to the server. An operator can review it with "+
		"'%s show %s %s'%s%s",
		clean(e.Tool, maxValue), clean(e.Server, maxValue), why,
		cmd, shellWord(e.Server), shellWord(e.Tool), approve, where)
}

// maxStore bounds the runes of the store named in a QuarantinedError.
const maxStore = 1024

// Is reports that e is ErrQuarantined.
func (e *QuarantinedError) Is(target error) bool { return target == ErrQuarantined }

// shellWord quotes s, cut to maxValue runes, for a command line when it
// needs it.
func shellWord(s string) string { return quoteWord(clean(s, maxValue)) }

// quoteWord quotes s for a command line when it needs it.
func quoteWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_.-/:@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Allowed reports whether a call to server's tool (the upstream's name)
// may go ahead: nil, or a *QuarantinedError. Call it on every tools/call
// before forwarding. It answers from memory, reading the store again at
// most once per Options.Refresh per tool; when the store cannot be read
// it answers from what it read last, and fails (closed) only for a tool
// it knows nothing of while the store is unavailable. A tool the store
// holds no pin of is allowed: Check pins tools as they are listed.
func (p *Pinner) Allowed(ctx context.Context, server, tool string) error {
	if p.modeOf(server) == ModeOff {
		return nil
	}
	// A server is known once Check has seen it; calls to others do not
	// grow the Pinner's memory.
	p.mu.RLock()
	s := p.servers[server]
	p.mu.RUnlock()
	if s == nil {
		s = &serverPins{tools: map[string]*entry{}}
	}
	e := s.get(tool)
	now := p.now()
	if e == nil || now.Sub(e.at) >= p.refresh {
		if e == nil || e.refreshing.CompareAndSwap(false, true) {
			fresh, err := p.reload(ctx, s, server, tool, now)
			switch {
			case err == nil:
				e = fresh
			case e == nil:
				return fmt.Errorf("pin: the pins of %q cannot be read, so the call is refused: %w", clean(server, maxValue), err)
			default:
				e.refreshing.Store(false)
				p.log.Warn("pin: the store cannot be read; answering from what was read last", "server", server, "tool", tool, "error", err)
			}
		}
	}
	if e.rec != nil && e.rec.Pinned.NewTool() {
		return newToolError(e.rec, p.spec)
	}
	if e.rec == nil || e.rec.State != StateQuarantined || e.rec.Pending == nil {
		return nil
	}
	d := e.diff
	if d == nil {
		d = Compare(e.rec.Pinned, e.rec.Pending)
		s.setDiff(e, d)
	}
	return &QuarantinedError{Server: server, Tool: tool, Pinned: e.rec.Pinned.Fingerprint(),
		Pending: e.rec.Pending.Fingerprint(), Since: e.rec.PendingSince, Changed: d.Summary(), Store: p.spec}
}

// newToolError refuses a call to a tool whose pin holds nothing approved,
// whatever its state.
func newToolError(r *Record, store string) *QuarantinedError {
	e := &QuarantinedError{Server: r.Server, Tool: r.Tool, Pinned: r.Pinned.Fingerprint(), Since: r.PinnedAt, Store: store, New: true}
	if r.Pending != nil {
		e.Pending, e.Since = r.Pending.Fingerprint(), r.PendingSince
	}
	return e
}

// setDiff caches a computed diff on the entry that is still current.
func (s *serverPins) setDiff(e *entry, d *Diff) {
	s.mu.Lock()
	if s.tools[e.rec.Tool] == e {
		s.tools[e.rec.Tool] = &entry{rec: e.rec, at: e.at, diff: d}
	}
	s.mu.Unlock()
}

// reload reads one tool's record from the store into the cache.
func (p *Pinner) reload(ctx context.Context, s *serverPins, server, tool string, now time.Time) (*entry, error) {
	r, err := p.store.Get(ctx, server, tool)
	switch {
	case errors.Is(err, ErrNotFound):
		return &entry{at: now}, nil // not cached: only listed tools are
	case err != nil:
		return nil, err
	}
	var d *Diff
	if old := s.get(tool); old != nil && old.rec != nil && samePending(old.rec, r) {
		d = old.diff
	}
	return s.put(r, now, d), nil
}

// Approve approves the definition of server's tool whose fingerprint is
// given (the one awaiting approval, as shown by Records or the CLI),
// naming approver, and returns the record. The tool is released at once
// in this process, and in other replicas sharing the store within
// Options.Refresh.
func (p *Pinner) Approve(ctx context.Context, server, tool, fingerprint, approver string) (*Record, error) {
	if strings.TrimSpace(approver) == "" {
		return nil, errors.New("pin: an approval names its approver")
	}
	s := p.server(server)
	s.check.Lock()
	defer s.check.Unlock()
	now := p.now()
	r, err := p.store.Approve(ctx, server, tool, fingerprint, approver, now)
	if err != nil {
		return nil, err
	}
	s.put(r, now, nil)
	p.log.Info("pin: approved", "server", server, "tool", tool, "fingerprint", fingerprint, "approver", approver)
	return r, nil
}

// Records returns the store's records of server, or of every server when
// server is "", for a page or a command to show.
func (p *Pinner) Records(ctx context.Context, server string) ([]*Record, error) {
	return p.store.List(ctx, server)
}
