package state

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/redis/go-redis/v9"
)

// redisBus is a Bus on Redis pub/sub. One connection per process carries
// every subscription: each topic with local subscribers is one Redis
// channel (prefix + topic), and a reader goroutine fans its messages out
// to the subscribers through a hub. Publish is PUBLISH on the client's
// pool.
//
// The reader survives Redis going away: the client reconnects and
// resubscribes, and each topic's first subscription confirmation after a
// loss is delivered as a Gap. A connection that stops answering (no reply
// to a PING within a health interval) is replaced by a new one.
type redisBus struct {
	client  redis.UniversalClient
	addr    string
	prefix  string
	hub     *hub
	timeout time.Duration // of Subscribe's confirmation
	health  time.Duration
	log     *slog.Logger

	ctx    context.Context // ends at Close
	cancel context.CancelFunc

	mu     sync.Mutex
	ps     *redis.PubSub // nil until the first Subscribe
	topics map[string]*redisTopic
	pings  map[string]chan struct{} // payload of a confirming PING -> closed on its PONG
	lost   chan struct{}            // closed (and replaced) when the connection is lost
	closed bool
	done   chan struct{} // closed when the reader has returned
}

type redisTopic struct {
	refs  int
	stale bool // the connection was lost since the last confirmation
}

func newRedisBus(client redis.UniversalClient, addr, prefix string, o *Options) *redisBus {
	ctx, cancel := context.WithCancel(context.Background())
	return &redisBus{
		client: client, addr: addr, prefix: prefix,
		hub:     newHub(o.Subscriptions, o.Buffer),
		timeout: o.SubscribeTimeout, health: o.HealthInterval, log: o.Logger,
		ctx: ctx, cancel: cancel,
		topics: make(map[string]*redisTopic),
		pings:  make(map[string]chan struct{}),
		lost:   make(chan struct{}),
	}
}

func (b *redisBus) Publish(ctx context.Context, topic string, payload []byte) error {
	if err := checkPublish(topic, payload); err != nil {
		return err
	}
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if err := b.client.Publish(ctx, b.prefix+topic, payload).Err(); err != nil {
		return unavailable(ctx, b.addr, "publish", err)
	}
	return nil
}

func (b *redisBus) Stats() BusStats { return b.hub.stats() }

func (b *redisBus) Subscribe(ctx context.Context, topic string) (<-chan Message, func(), error) {
	if err := checkKey("topic", topic); err != nil {
		return nil, nil, err
	}
	// Local first, so that nothing published after the confirmation is
	// missed.
	s, err := b.hub.add(topic)
	if err != nil {
		return nil, nil, err
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		b.hub.remove(s)
		return nil, nil, ErrClosed
	}
	if b.ps == nil {
		b.ps = b.client.Subscribe(b.ctx)
		b.done = make(chan struct{})
		go b.read()
	}
	t := b.topics[topic]
	if t == nil {
		t = &redisTopic{}
		b.topics[topic] = t
		// An error is left to the confirmation below: the client
		// remembers the channel and subscribes when it reconnects.
		_ = b.ps.Subscribe(ctx, b.prefix+topic)
	}
	t.refs++
	b.mu.Unlock()
	unsubscribe := func() {
		b.hub.remove(s)
		b.release(topic)
	}
	if err := b.confirm(ctx); err != nil {
		unsubscribe()
		return nil, nil, err
	}
	return s.ch, subscription(ctx, unsubscribe), nil
}

// release drops one reference to topic and unsubscribes from its channel
// with the last.
func (b *redisBus) release(topic string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.topics[topic]
	if t == nil {
		return
	}
	if t.refs--; t.refs > 0 {
		return
	}
	delete(b.topics, topic)
	if !b.closed {
		// On error the connection is gone, and the client will not
		// resubscribe: it forgot the channel first.
		_ = b.ps.Unsubscribe(b.ctx, b.prefix+topic)
	}
}

// confirm waits until Redis has processed every SUBSCRIBE sent so far:
// it sends a PING with a unique payload on the subscription connection,
// which Redis answers after the commands before it. A PING lost with its
// connection is sent again on the next one, until the timeout.
func (b *redisBus) confirm(outer context.Context) error {
	ctx, cancel := context.WithTimeout(outer, b.timeout)
	defer cancel()
	var last error
	for {
		token := newToken()
		pong := make(chan struct{})
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return ErrClosed
		}
		ps, lost := b.ps, b.lost
		b.pings[token] = pong
		b.mu.Unlock()
		err := ps.Ping(ctx, token)
		if err == nil {
			select {
			case <-pong:
				return nil
			case <-lost:
				err = errors.New("the connection was lost")
			case <-ctx.Done():
				err = ctx.Err()
			}
		}
		b.mu.Lock()
		delete(b.pings, token)
		b.mu.Unlock()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			last = err
		}
		if outer.Err() != nil {
			return fmt.Errorf("state: subscribe: %w", outer.Err())
		}
		if ctx.Err() != nil {
			if last == nil {
				last = errors.New("no confirmation of the subscription within " + b.timeout.String())
			}
			return unavailable(ctx, b.addr, "subscribe", last)
		}
		select { // the reader reconnects meanwhile
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// read receives from the subscription connection until Close.
func (b *redisBus) read() {
	defer close(b.done)
	backoff := minBackoff
	pinged := false // a health PING is unanswered
	for {
		b.mu.Lock()
		ps, closed := b.ps, b.closed
		b.mu.Unlock()
		if closed {
			return
		}
		msg, err := ps.ReceiveTimeout(b.ctx, b.health)
		if err != nil {
			if b.ctx.Err() != nil {
				return
			}
			if isTimeout(err) {
				if pinged {
					b.log.Warn("shared state: no answer on the Redis subscription connection; replacing it", "redis", b.addr)
					b.replace()
					pinged = false
				} else {
					_ = ps.Ping(b.ctx)
					pinged = true
				}
				continue
			}
			b.connectionLost(err)
			select {
			case <-b.ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		backoff, pinged = minBackoff, false
		switch m := msg.(type) {
		case *redis.Message:
			if topic, ok := strings.CutPrefix(m.Channel, b.prefix); ok {
				b.hub.deliver(Message{Topic: topic, Payload: []byte(m.Payload)})
			}
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				b.subscribed(m.Channel)
			}
		case *redis.Pong:
			b.mu.Lock()
			if pong, ok := b.pings[m.Payload]; ok {
				delete(b.pings, m.Payload)
				close(pong)
			}
			b.mu.Unlock()
		}
	}
}

// Reconnection backoff of the reader.
const (
	minBackoff = 50 * time.Millisecond
	maxBackoff = 2 * time.Second
)

// connectionLost marks every topic stale and wakes the confirmations
// waiting for a PONG that will not come.
func (b *redisBus) connectionLost(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	stale := 0
	for _, t := range b.topics {
		if !t.stale {
			t.stale = true
			stale++
		}
	}
	if stale > 0 || len(b.pings) > 0 {
		b.log.Warn("shared state: Redis subscription connection lost; resubscribing", "redis", b.addr, "error", text.Clip(text.OneLine(err.Error()), 200))
	}
	close(b.lost)
	b.lost = make(chan struct{})
	clear(b.pings)
}

// subscribed handles a subscription confirmation: after a loss, the
// topic's subscribers get a Gap.
func (b *redisBus) subscribed(channel string) {
	topic, ok := strings.CutPrefix(channel, b.prefix)
	if !ok {
		return
	}
	b.mu.Lock()
	t := b.topics[topic]
	gap := t != nil && t.stale
	if gap {
		t.stale = false
	}
	b.mu.Unlock()
	if gap {
		b.hub.deliver(Message{Topic: topic, Gap: true})
	}
}

// replace swaps the subscription connection for a new one subscribed to
// every topic.
func (b *redisBus) replace() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	old := b.ps
	channels := make([]string, 0, len(b.topics))
	for topic := range b.topics {
		channels = append(channels, b.prefix+topic)
	}
	b.ps = b.client.Subscribe(b.ctx, channels...)
	b.mu.Unlock()
	_ = old.Close()
	b.connectionLost(errors.New("no answer to PING"))
}

func (b *redisBus) close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	ps, done := b.ps, b.done
	b.mu.Unlock()
	b.cancel()
	if ps != nil {
		_ = ps.Close()
		<-done
	}
	b.hub.close()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
