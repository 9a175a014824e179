package clientconf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/text"
)

// browser is the person who connects the upstream on the gateway's page:
// an HTTP user agent that keeps cookies and follows redirects, as the
// suite's example clients follow the authorization server's.
type browser struct {
	client *http.Client
	log    string // the gateway's log, where it prints its login link
}

func newBrowser(log string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{client: &http.Client{Jar: jar, Timeout: 30 * time.Second}, log: log}
}

// signIn signs in with the page's one-time login link, which the gateway
// printed: the link's page posts its token, as its button does.
func (b *browser) signIn(ctx context.Context) error {
	link, err := loginLink(b.log)
	if err != nil {
		return err
	}
	u, err := url.Parse(link)
	if err != nil {
		return err
	}
	form := url.Values{"token": {u.Query().Get("token")}}
	u.RawQuery = ""
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

// loginLink is the one-time login link the gateway prints at start-up
// (after it answers /healthz, so it may be on its way).
func loginLink(log string) (string, error) {
	for deadline := time.Now().Add(settleTimeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		data, err := os.ReadFile(log)
		if err != nil {
			return "", err
		}
		if l := loginURL.Find(data); l != nil {
			return string(l), nil
		}
	}
	return "", errors.New("the gateway printed no login link")
}

var loginURL = regexp.MustCompile(`https?://[^\s"]+/ui/login\?token=[A-Za-z0-9_-]+`)

// connect opens link (the page's Connect of the upstream), follows the
// authorization server back to the gateway, and checks the page says so.
func (b *browser) connect(ctx context.Context, link string) error {
	body, err := b.get(ctx, link)
	if err != nil {
		return err
	}
	if !strings.Contains(body, `id="connected"`) {
		return fmt.Errorf("connecting did not end on the page's confirmation:\n%s", text.Clip(body, 2000))
	}
	return nil
}

func (b *browser) get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	return b.page(req)
}

func (b *browser) do(req *http.Request) error {
	_, err := b.page(req)
	return err
}

// page sends req, following redirects, and returns the page it ends on.
func (b *browser) page(req *http.Request) (string, error) {
	resp, err := b.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s\n%s", resp.Request.URL, resp.Status, text.Clip(string(data), 2000))
	}
	return string(data), nil
}

// connectLink finds the page's link to connect an upstream in a tool
// error the gateway answered.
var connectLink = regexp.MustCompile(`https?://\S+/connections/[^/\s]+/connect`)

// maxConnects bounds the sign-ins of one scenario: the first, and one
// step-up; an upstream that keeps refusing is not signed in to forever.
const maxConnects = 3

// signedIn plays do, connecting again when the gateway answers a call
// with its link to connect the upstream (a refused token, or a step-up).
func signedIn(do client, b *browser) client {
	return func(ctx context.Context, p peer) error {
		p = &linkWatch{peer: p}
		for n := 1; ; n++ {
			err := do(ctx, p)
			link := p.(*linkWatch).link
			if link == "" || n >= maxConnects {
				return err
			}
			p.(*linkWatch).link = ""
			if err := b.connect(ctx, link); err != nil {
				return err
			}
		}
	}
}

// linkWatch remembers the gateway's link to connect an upstream, and
// turns the tool error carrying it into an error that ends the play.
type linkWatch struct {
	peer
	link string
}

func (w *linkWatch) request(ctx context.Context, method string, params map[string]any) (map[string]any, error) {
	res, err := w.peer.request(ctx, method, params)
	text := ""
	if err != nil {
		text = err.Error()
	} else if b, merr := json.Marshal(res); merr == nil && res["isError"] == true {
		text = string(b)
	}
	if l := connectLink.FindString(text); l != "" {
		w.link = l
		return nil, fmt.Errorf("the gateway asks to connect the upstream: %s", l)
	}
	return res, err
}
