package approval

import (
	"context"
	"sync"

	"github.com/preflightmcp/preflight/gateway/internal/state"
)

// BusNotifier is a Notifier over the gateway's shared-state bus
// (state.Bus: in this process, or Redis pub/sub across replicas).
//
// A subscription the bus refuses (Redis away) is a closed channel, and a
// gap in the bus's delivery (Redis restarted: messages may have been
// lost) ends the subscription: either way the Service's waiters read the
// store again at once, and it subscribes anew after Options.Recheck.
func BusNotifier(b state.Bus) Notifier { return busNotifier{b} }

type busNotifier struct{ bus state.Bus }

func (n busNotifier) Publish(ctx context.Context, topic string, payload []byte) error {
	return n.bus.Publish(ctx, topic, payload)
}

func (n busNotifier) Subscribe(ctx context.Context, topic string) (<-chan []byte, func()) {
	msgs, cancel, err := n.bus.Subscribe(ctx, topic)
	if err != nil {
		ch := make(chan []byte)
		close(ch)
		return ch, func() {}
	}
	out := make(chan []byte, 64)
	done := make(chan struct{})
	go func() {
		defer close(out)
		defer cancel()
		for {
			select {
			case <-done:
				return
			case m, ok := <-msgs:
				if !ok || m.Gap {
					return
				}
				select {
				case out <- m.Payload:
				default: // a full buffer drops, as LocalNotifier does
				}
			}
		}
	}()
	var once sync.Once
	return out, func() { once.Do(func() { close(done); cancel() }) }
}
