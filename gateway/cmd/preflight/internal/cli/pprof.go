package cli

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/loopback"
)

// servePprof serves the runtime's profiles (net/http/pprof, under
// /debug/pprof/) at addr, which must be a loopback address; stop closes
// the listener and its connections and waits for the server to end.
func servePprof(addr string, logger *slog.Logger) (stop func(), err error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, usagef("-pprof %q: %v", addr, err)
	}
	if !loopback.Is(addr) {
		return nil, usagef("-pprof %q: profiles are served on a loopback address only", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, &exitError{code: exitFailure, err: err}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			logger.Error("pprof", "err", err)
		}
	}()
	logger.Info("serving profiles", "url", "http://"+ln.Addr().String()+"/debug/pprof/")
	return func() { srv.Close(); <-done }, nil
}
