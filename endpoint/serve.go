package endpoint

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Path is the URL path at which [Serve] and [ListenAndServe] mount the MCP
// endpoint. Other paths answer 404.
const Path = "/mcp"

// shutdownGrace bounds how long a shutdown waits for requests in flight.
// Legacy clients hold a standalone event stream open for the whole session,
// so a graceful shutdown alone could wait forever; after this long the
// remaining connections are closed.
const shutdownGrace = 5 * time.Second

// Defaults of [ServeOptions].
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
)

// ServeOptions configures [ServeWith]. A nil *ServeOptions means the zero
// value: every timeout at its default. There is no write timeout:
// responses may be long event streams.
type ServeOptions struct {
	// ReadHeaderTimeout bounds how long a client may take to send a
	// request's headers. Zero means [DefaultReadHeaderTimeout].
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds how long a client may take to send a whole
	// request, headers and body; a body still incomplete then fails to
	// read, the request is answered 400 and the connection closed. net/http
	// lifts the deadline once the body has been read, so the response (an
	// event stream, say) may last as long as it needs.
	// Zero means [DefaultReadTimeout].
	ReadTimeout time.Duration
	// IdleTimeout closes a kept-alive connection that waits this long for
	// its next request. Zero means [DefaultIdleTimeout].
	IdleTimeout time.Duration
}

// ListenAndServe listens on the TCP address addr and calls [Serve]. To learn
// the bound address of ":0", call net.Listen and Serve yourself.
func ListenAndServe(ctx context.Context, addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("endpoint: %w", err)
	}
	return Serve(ctx, ln, h)
}

// Serve is [ServeWith] with the default options.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	return ServeWith(ctx, ln, h, nil)
}

// ServeWith serves h at [Path] on ln until ctx is done, then shuts down: it
// stops accepting connections, ends the standalone event streams (GET
// requests) of legacy sessions, which carry no request in flight, lets
// other requests finish for a few seconds, closes whatever is still open,
// and returns. It closes ln. Legacy sessions that their clients did not
// delete stay open in the *mcp.Server (see [mcp.Server.Sessions]) until
// their idle timeout ([Options.SessionTimeout]).
//
// A client that is slow to send headers or a body, or that keeps an idle
// connection, is cut off after the timeouts of opts (nil means the
// defaults), so a slow sender cannot hold a connection indefinitely.
//
// It returns nil after a clean shutdown caused by ctx, and otherwise the
// error that stopped the server or the shutdown.
func ServeWith(ctx context.Context, ln net.Listener, h http.Handler, opts *ServeOptions) error {
	var o ServeOptions
	if opts != nil {
		o = *opts
	}
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	streams, endStreams := context.WithCancel(context.Background())
	defer endStreams()
	mux := http.NewServeMux()
	mux.Handle(Path, endStreamsOn(streams, h))
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		ReadTimeout:       o.ReadTimeout,
		IdleTimeout:       o.IdleTimeout,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	select {
	case err := <-served:
		return fmt.Errorf("endpoint: %w", err)
	case <-ctx.Done():
	}

	endStreams()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		srv.Close()
	}
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		return fmt.Errorf("endpoint: %w", serr)
	}
	if err != nil {
		return fmt.Errorf("endpoint: shutdown: %w", err)
	}
	return nil
}

// endStreamsOn gives each GET request a context that also ends when done
// does, so that a shutdown need not wait for long-lived event streams.
func endStreamsOn(done context.Context, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet {
			h.ServeHTTP(w, req)
			return
		}
		ctx, cancel := context.WithCancel(req.Context())
		defer cancel()
		stop := context.AfterFunc(done, cancel)
		defer stop()
		h.ServeHTTP(w, req.WithContext(ctx))
	})
}

// ServeStdio runs server over stdin and stdout until ctx is done or the
// client goes away. Over stdio the SDK serves both protocol eras itself.
// A line that is not a JSON-RPC message is answered with -32700 (not JSON)
// or -32600 and dropped; the connection goes on. It returns nil when ctx
// ends it.
func ServeStdio(ctx context.Context, server *mcp.Server) error {
	return serveTransport(ctx, server, stdioTransport(os.Stdin, os.Stdout))
}

// serveTransport is ServeStdio with the transport as a parameter, for tests.
func serveTransport(ctx context.Context, server *mcp.Server, t mcp.Transport) error {
	err := server.Run(ctx, t)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return err
}
