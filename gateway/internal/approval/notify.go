package approval

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Topic is the topic decisions are published on; the payload is the
// request's id. A payload is only a hint to read the store again.
const Topic = "preflight.approval.decided"

// Notifier carries messages between replicas: Redis pub/sub for a fleet,
// [LocalNotifier] within one process. Delivery may be lossy; the Service
// copes by reading the store again every Options.Recheck.
type Notifier interface {
	// Publish sends payload to the subscribers of topic on every replica.
	Publish(ctx context.Context, topic string, payload []byte) error
	// Subscribe returns the messages published to topic once it has
	// returned, and a function that ends the subscription. The channel
	// is closed when the subscription ends (or is lost); ctx ending ends
	// it too.
	Subscribe(ctx context.Context, topic string) (<-chan []byte, func())
}

// LocalNotifier is the in-process Notifier. Each subscriber has a buffer
// of 64 messages; a message to a full buffer is dropped.
type LocalNotifier struct {
	mu   sync.Mutex
	subs map[string]map[*localSub]struct{}
}

type localSub struct {
	ch   chan []byte
	done bool
}

// NewLocalNotifier returns a notifier that delivers within the process.
func NewLocalNotifier() *LocalNotifier {
	return &LocalNotifier{subs: map[string]map[*localSub]struct{}{}}
}

// Publish implements Notifier.
func (n *LocalNotifier) Publish(_ context.Context, topic string, payload []byte) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for s := range n.subs[topic] {
		select {
		case s.ch <- append([]byte(nil), payload...):
		default:
		}
	}
	return nil
}

// Subscribe implements Notifier.
func (n *LocalNotifier) Subscribe(ctx context.Context, topic string) (<-chan []byte, func()) {
	s := &localSub{ch: make(chan []byte, 64)}
	n.mu.Lock()
	if n.subs[topic] == nil {
		n.subs[topic] = map[*localSub]struct{}{}
	}
	n.subs[topic][s] = struct{}{}
	n.mu.Unlock()
	end := func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		if s.done {
			return
		}
		s.done = true
		delete(n.subs[topic], s)
		if len(n.subs[topic]) == 0 {
			delete(n.subs, topic)
		}
		close(s.ch)
	}
	stop := context.AfterFunc(ctx, end)
	return s.ch, func() { stop(); end() }
}

// hub shares one subscription among the waiters of a Service: it
// subscribes when the first waiter comes and ends the subscription when
// the last one leaves, and wakes the waiters of the ids it hears of.
type hub struct {
	bus     Notifier
	recheck time.Duration
	log     *slog.Logger

	mu      sync.Mutex
	waiters map[string]map[*waiter]struct{}
	count   int
	sub     *subscription
	// lostAt is when a subscription was last lost; a new one is not
	// tried within recheck of it, so a notifier that fails at once is
	// not retried in a loop.
	lostAt time.Time
}

type waiter struct {
	id   string
	wake chan struct{}
}

type subscription struct {
	stop func()
	done chan struct{}
}

func (s *subscription) end() {
	close(s.done)
	s.stop()
}

// add registers a waiter for id.
func (h *hub) add(id string) *waiter {
	w := &waiter{id: id, wake: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waiters[id] == nil {
		h.waiters[id] = map[*waiter]struct{}{}
	}
	h.waiters[id][w] = struct{}{}
	h.count++
	return w
}

// remove unregisters w, ending the subscription after the last waiter.
func (h *hub) remove(w *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.waiters[w.id], w)
	if len(h.waiters[w.id]) == 0 {
		delete(h.waiters, w.id)
	}
	h.count--
	if h.count == 0 && h.sub != nil {
		h.sub.end()
		h.sub = nil
	}
}

// ensure subscribes unless a subscription is live or was lost within
// recheck. It returns once the subscription delivers what is published
// afterwards.
func (h *hub) ensure(now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sub != nil || h.count == 0 || (!h.lostAt.IsZero() && now.Sub(h.lostAt) < h.recheck) {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	msgs, stop := h.bus.Subscribe(ctx, Topic)
	sub := &subscription{stop: func() { stop(); cancel() }, done: make(chan struct{})}
	h.sub = sub
	go h.dispatch(sub, msgs)
}

// dispatch wakes the waiters of each id heard until sub ends; if the
// notifier closes the channel first, it wakes every waiter, which read
// the store again and subscribe anew.
func (h *hub) dispatch(sub *subscription, msgs <-chan []byte) {
	for {
		select {
		case <-sub.done:
			return
		case p, ok := <-msgs:
			h.mu.Lock()
			if !ok {
				if h.sub == sub {
					h.log.Warn("approval notifications lost; reading the store every recheck interval until a new subscription", "recheck", h.recheck)
					h.sub = nil
					h.lostAt = time.Now()
					sub.end()
					for _, ws := range h.waiters {
						for w := range ws {
							w.poke()
						}
					}
				}
				h.mu.Unlock()
				return
			}
			for w := range h.waiters[string(p)] {
				w.poke()
			}
			h.mu.Unlock()
		}
	}
}

func (w *waiter) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}
