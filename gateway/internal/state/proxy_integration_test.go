//go:build integration

package state_test

import (
	"net"
	"sync"
	"testing"
)

// proxy forwards TCP connections to a server until freeze makes every
// connection open at that moment silent: what either side sends is read
// and dropped, and neither is closed, as on a network that loses packets.
// Connections made later are forwarded.
type proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	conns  []*proxied
	closed bool
	wg     sync.WaitGroup
}

type proxied struct {
	client, server net.Conn
	silent         bool // guarded by proxy.mu
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		pc := &proxied{client: c, server: s}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			s.Close()
			return
		}
		p.conns = append(p.conns, pc)
		p.wg.Go(func() { p.copy(pc, s, c) })
		p.wg.Go(func() { p.copy(pc, c, s) })
		p.mu.Unlock()
	}
}

// copy forwards src to dst, or drops it once pc is frozen.
func (p *proxy) copy(pc *proxied, dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			dst.Close()
			return
		}
		p.mu.Lock()
		silent := pc.silent
		p.mu.Unlock()
		if !silent {
			if _, err := dst.Write(buf[:n]); err != nil {
				src.Close()
				return
			}
		}
	}
}

func (p *proxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pc := range p.conns {
		pc.silent = true
	}
}

func (p *proxy) close() {
	p.mu.Lock()
	p.closed = true
	for _, pc := range p.conns {
		pc.client.Close()
		pc.server.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}
