// Command oauthas is a real OAuth 2.1 authorization server for preflight's
// tests, built on fosite; gateway/internal/testrig/oauthas builds and runs
// it. It lives in a module of its own, outside go.work, so that fosite's
// dependencies never enter the gateway's build list (docs/design.md,
// "Modules").
//
// It grants the authorization code with PKCE S256 (required), refresh
// tokens (rotated on each use) and revocation (RFC 7009) to two
// pre-registered clients, preflight-public and preflight-confidential
// (secret confidential-client-secret), whose redirect URIs are any
// loopback port at /ui/connections/callback, with the scopes mcp:tools
// and offline_access. The authorize endpoint grants at once to the person
// whose browser carries the cookie oauthas_user (its value is the
// subject) and refuses a browser without it. Resource servers check
// access tokens by introspection (RFC 7662) as the client
// preflight-resource (secret resource-server-secret). Its metadata (RFC
// 8414) is at /.well-known/oauth-authorization-server.
//
// Under /test/ the same listener serves what tests control and observe:
//
//	POST /test/access-ttl  from_code=DURATION&from_refresh=DURATION: lifespans of the access tokens granted from now on
//	GET  /test/refreshes   {"SUBJECT": N}: refresh grants per subject
//	GET  /test/resources   ["..."]: the resource parameters of the authorizations
//	POST /test/revoke      subject=SUBJECT: revoke every grant of the subject (404 if none)
//
// Usage:
//
//	oauthas [-addr 127.0.0.1:0] [-url-file FILE]
//
// Once listening, it writes its URL (the issuer, http://HOST:PORT) and a
// newline to stdout, or to FILE; it stops on SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// Bounds of the HTTP server.
const (
	maxBodyBytes   = 64 << 10
	maxHeaderBytes = 64 << 10
	stopTimeout    = 5 * time.Second
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "`address` to listen on (port 0: a free one)")
	urlFile := flag.String("url-file", "", "write the URL to `file` once listening, instead of stdout")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "oauthas: unexpected arguments %q\n", flag.Args())
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *urlFile); err != nil {
		fmt.Fprintf(os.Stderr, "oauthas: %v\n", err)
		os.Exit(1)
	}
}

// run serves on addr until ctx ends.
func run(ctx context.Context, addr, urlFile string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	issuer := "http://" + dialable(ln.Addr().(*net.TCPAddr))
	s, err := newServer(issuer)
	if err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{
		Handler:           http.MaxBytesHandler(s.routes(), maxBodyBytes),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    maxHeaderBytes,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if err := announce(issuer, urlFile); err != nil {
		srv.Close()
		<-served
		return err
	}
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if err := srv.Shutdown(stopCtx); err != nil {
		srv.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// dialable is the listener's address as a client reaches it: an
// unspecified address (0.0.0.0, ::) becomes the loopback one.
func dialable(a *net.TCPAddr) string {
	ip := a.IP
	if ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
	}
	return net.JoinHostPort(ip.String(), fmt.Sprint(a.Port))
}

// announce writes the URL and a newline to stdout, or to file (whole: a
// reader never sees part of it).
func announce(url, file string) error {
	line := []byte(url + "\n")
	if file == "" {
		_, err := os.Stdout.Write(line)
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".oauthas-url-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(line); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}
