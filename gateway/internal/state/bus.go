package state

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Bus carries notifications between replicas: "something changed on
// topic", such as an approval given for a pending call, so the replica
// holding the waiting call re-reads the state it waits on. A notification
// is a hint, never the state itself: it may be lost (a replica was too
// slow, Redis was away) and then a [Message] with Gap set takes its
// place. Publishers change the state first and publish after; [Wait]
// does the rest.
type Bus interface {
	// Publish sends payload (at most [MaxPayload] bytes) to the topic's
	// subscribers on every replica. It never blocks on a subscriber.
	Publish(ctx context.Context, topic string, payload []byte) error
	// Subscribe returns the topic's messages from now on. When it
	// returns, a message published after it is delivered (on Redis, the
	// subscription is confirmed by the server). The channel is closed by
	// cancel, when ctx ends, or when the store closes; cancel may be
	// called more than once.
	Subscribe(ctx context.Context, topic string) (msgs <-chan Message, cancel func(), err error)
	// Stats counts subscriptions and dropped messages.
	Stats() BusStats
}

// Message is one notification on a topic.
type Message struct {
	Topic string
	// Payload is shared by every subscriber: do not modify it.
	Payload []byte
	// Gap says that messages on the topic may have been lost just before
	// this one (the connection to Redis was lost and restored); Payload
	// is empty. A subscriber re-reads the state it follows.
	Gap bool
}

// BusStats counts what a Bus did.
type BusStats struct {
	// Subscriptions open in this process.
	Subscriptions int
	// Dropped counts messages not delivered to a subscriber whose buffer
	// was full. Such a subscriber still has unread messages, each of which
	// makes [Wait] re-check, so no wakeup is lost.
	Dropped uint64
	// Gaps counts Gap messages delivered.
	Gaps uint64
}

// Bounds of the bus, and defaults of its [Options].
const (
	// MaxPayload bounds a message's payload, in bytes.
	MaxPayload = 64 << 10
	// DefaultSubscriptions bounds the open subscriptions of one process.
	DefaultSubscriptions = 10000
	// DefaultBuffer is each subscription's buffer, in messages.
	DefaultBuffer = 16
	// DefaultSubscribeTimeout bounds how long Subscribe waits for Redis
	// to confirm a subscription.
	DefaultSubscribeTimeout = 5 * time.Second
	// DefaultWaitTimeout bounds [Wait] when its context has no deadline.
	DefaultWaitTimeout = 10 * time.Minute
)

// Wait blocks until check reports true, and returns nil; or check's
// error; or the context's when it ends first (with [DefaultWaitTimeout]
// applied if it has no deadline); or the bus's when it cannot subscribe.
// It subscribes to topic before it first calls check, and calls check
// again after each message, so a change made and published by another
// replica at any moment after Wait began is never missed (no lost wakeup).
// check runs in Wait's goroutine, once per batch of messages.
func Wait(ctx context.Context, b Bus, topic string, check func() (bool, error)) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultWaitTimeout)
		defer cancel()
	}
	msgs, cancel, err := b.Subscribe(ctx, topic)
	if err != nil {
		return err
	}
	defer cancel()
	for {
		done, err := check()
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case _, open := <-msgs:
			if !open {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return ErrClosed
			}
		}
		// One check answers every message already queued.
		for drained := false; !drained; {
			select {
			case _, open := <-msgs:
				drained = !open
			default:
				drained = true
			}
		}
	}
}

func checkPublish(topic string, payload []byte) error {
	if err := checkKey("topic", topic); err != nil {
		return err
	}
	if len(payload) > MaxPayload {
		return invalid("payload of %d bytes: at most %d", len(payload), MaxPayload)
	}
	return nil
}

// hub fans messages out to this process's subscribers, never blocking.
type hub struct {
	max, buf int

	mu     sync.RWMutex // held for reading while delivering, for writing while closing channels
	topics map[string]map[*sub]struct{}
	n      int
	closed bool

	dropped, gaps atomic.Uint64
}

type sub struct {
	topic string
	ch    chan Message
}

func newHub(max, buf int) *hub {
	return &hub{max: max, buf: buf, topics: make(map[string]map[*sub]struct{})}
}

// add registers a subscriber of topic.
func (h *hub) add(topic string) (*sub, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	if h.n >= h.max {
		return nil, fmt.Errorf("%w: %d subscriptions open, the bound (Options.Subscriptions)", ErrFull, h.max)
	}
	s := &sub{topic: topic, ch: make(chan Message, h.buf)}
	subs := h.topics[topic]
	if subs == nil {
		subs = make(map[*sub]struct{})
		h.topics[topic] = subs
	}
	subs[s] = struct{}{}
	h.n++
	return s, nil
}

// remove unregisters s and closes its channel. It reports whether s was
// its topic's last subscriber.
func (h *hub) remove(s *sub) (last bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	subs, ok := h.topics[s.topic]
	if !ok {
		return false
	}
	if _, ok := subs[s]; !ok {
		return false
	}
	delete(subs, s)
	h.n--
	close(s.ch)
	if len(subs) == 0 {
		delete(h.topics, s.topic)
		return true
	}
	return false
}

// deliver offers m to the topic's subscribers; a full buffer drops it.
func (h *hub) deliver(m Message) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for s := range h.topics[m.Topic] {
		select {
		case s.ch <- m:
			if m.Gap {
				h.gaps.Add(1)
			}
		default:
			h.dropped.Add(1)
		}
	}
}

func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for _, subs := range h.topics {
		for s := range subs {
			close(s.ch)
		}
	}
	h.topics, h.n = nil, 0
}

func (h *hub) stats() BusStats {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return BusStats{Subscriptions: h.n, Dropped: h.dropped.Load(), Gaps: h.gaps.Load()}
}

// subscription makes the cancel function of a subscription: it runs
// unsubscribe once, when called or when ctx ends.
func subscription(ctx context.Context, unsubscribe func()) func() {
	var once sync.Once
	end := func() { once.Do(unsubscribe) }
	stop := context.AfterFunc(ctx, end)
	return func() {
		stop()
		end()
	}
}

// memBus is the in-process Bus.
type memBus struct{ hub *hub }

func (b *memBus) Publish(_ context.Context, topic string, payload []byte) error {
	if err := checkPublish(topic, payload); err != nil {
		return err
	}
	b.hub.mu.RLock()
	closed := b.hub.closed
	b.hub.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	b.hub.deliver(Message{Topic: topic, Payload: append([]byte(nil), payload...)})
	return nil
}

func (b *memBus) Subscribe(ctx context.Context, topic string) (<-chan Message, func(), error) {
	if err := checkKey("topic", topic); err != nil {
		return nil, nil, err
	}
	s, err := b.hub.add(topic)
	if err != nil {
		return nil, nil, err
	}
	return s.ch, subscription(ctx, func() { b.hub.remove(s) }), nil
}

func (b *memBus) Stats() BusStats { return b.hub.stats() }
