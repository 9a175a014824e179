package audit_test

import (
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/hints"
)

var now = time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)

func TestParseFilter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		query string
		want  audit.Filter
	}{
		{"", audit.Filter{}},
		{"since=1h", audit.Filter{Since: now.Add(-time.Hour)}},
		{"since=7d&until=30m", audit.Filter{Since: now.Add(-7 * 24 * time.Hour), Until: now.Add(-30 * time.Minute)}},
		{"since=2026-07-01&until=2026-07-28T10:00:00%2B02:00",
			audit.Filter{Since: time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC), Until: time.Date(2026, 7, 28, 8, 0, 0, 0, time.UTC)}},
		{"principal=alice%40example.com&server=files&tool=delete_file",
			audit.Filter{Principal: "alice@example.com", Server: "files", Tool: "delete_file"}},
		{"effect=delete&decision=confirm&outcome=unknown&limit=10&order=newest",
			audit.Filter{Effect: hints.EffectDelete, Decision: audit.Confirm, Outcome: audit.OutcomeUnknown, Limit: 10, Newest: true}},
		{"order=oldest&outcome=tool_error", audit.Filter{Outcome: audit.OutcomeToolError}},
	} {
		q, err := url.ParseQuery(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		got, err := audit.ParseFilter(q, now)
		if err != nil {
			t.Errorf("%q: %v", tc.query, err)
			continue
		}
		if !got.Since.Equal(tc.want.Since) || !got.Until.Equal(tc.want.Until) {
			t.Errorf("%q: since %v until %v, want %v %v", tc.query, got.Since, got.Until, tc.want.Since, tc.want.Until)
		}
		got.Since, got.Until, tc.want.Since, tc.want.Until = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		if got != tc.want {
			t.Errorf("%q: %+v, want %+v", tc.query, got, tc.want)
		}
	}
	for _, tc := range []struct{ query, want string }{
		{"frobnicate=1", `unknown filter "frobnicate": want one of since, until`},
		{"server=a&server=b", "filter server given 2 times"},
		{"since=yesterday", `since: "yesterday": want a time`},
		{"since=-1h", `since: "-1h": want a time`},
		{"since=99999999d", `since: "99999999d": want a time`},
		{"since=1h&until=2h", "is not before until"},
		{"effect=destroy", `effect "destroy": want read, write, external or delete`},
		{"decision=maybe", `decision "maybe": want allow, confirm or deny`},
		{"outcome=fine", `outcome "fine": want one of ok, tool_error,`},
		{"limit=0", `limit "0": want a number from 1 to 1000000`},
		{"limit=x", `limit "x"`},
		{"order=random", `order "random": want oldest or newest`},
		{"principal=" + strings.Repeat("a", 300), "principal: longer than 256 bytes"},
		{"tool=%ff", "tool: not valid UTF-8 text"},
		{"tool=a%00b", "tool: not valid UTF-8 text"},
	} {
		q, err := url.ParseQuery(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := audit.ParseFilter(q, now); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.query, err, tc.want)
		}
	}
}

// FuzzParseFilter: any query either fails with a bounded message or gives
// a filter within bounds; nothing panics.
func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{"", "since=1h", "since=7d&until=2026-07-28", "effect=delete&decision=confirm&outcome=unknown",
		"limit=10&order=newest", "principal=%ff", "tool=a&tool=b", "since=9223372036854775807ns", "since=2562047h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := url.ParseQuery(s)
		if err != nil {
			return
		}
		got, err := audit.ParseFilter(q, now)
		if err != nil {
			if len(err.Error()) > 400 {
				t.Fatalf("error of %d bytes: %.100s", len(err.Error()), err)
			}
			return
		}
		if !got.Since.IsZero() && !got.Until.IsZero() && !got.Since.Before(got.Until) {
			t.Fatalf("since %v not before until %v", got.Since, got.Until)
		}
		for _, n := range []string{got.Principal, got.Server, got.Tool} {
			if len(n) > audit.MaxNameBytes || !utf8.ValidString(n) || strings.ContainsRune(n, 0) {
				t.Fatalf("name %q", n)
			}
		}
		if got.Limit < 0 || got.Limit > audit.MaxLimit {
			t.Fatalf("limit %d", got.Limit)
		}
		if got.Effect != "" && got.Effect.Rank() < 0 || got.Decision != "" && !got.Decision.Valid() || got.Outcome != "" && !got.Outcome.Valid() {
			t.Fatalf("filter %+v", got)
		}
	})
}
