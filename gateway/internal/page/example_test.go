package page_test

import (
	"fmt"
	"net/http/httptest"
	"net/url"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/gateway/internal/loopback"
	"github.com/preflightmcp/preflight/gateway/internal/page"
)

// The gateway serves the page on a loopback address and prints a one-time
// login link on its terminal.
func ExampleNew() {
	approvals := approval.New(nil, nil) // shared with the gateway's ask stage
	login := page.NewTokenLogin(nil)    // the operator, on loopback
	h, err := page.New(login, &page.Options{Approvals: approvals})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(h) // listens on 127.0.0.1
	defer srv.Close()

	link, _ := login.NewLink(srv.URL)
	u, _ := url.Parse(link)
	fmt.Println(loopback.Is(u.Host), u.Path, len(u.Query().Get("token")))
	// Output: true /login 43
}
