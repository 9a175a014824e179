package forward

//lint:file-ignore SA1019 the gateway passes sampling, roots and logging through faithfully; protocol 2026-07-28 deprecates them (SEP-2577) but clients and servers still use them during the deprecation window.

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/upstream"
)

// fakeExchange counts Close calls; nothing else is used by parking.
type fakeExchange struct{ closed atomic.Int32 }

func (f *fakeExchange) Next(context.Context) (*upstream.Step, error) {
	return nil, errors.New("unused")
}
func (f *fakeExchange) Answer(mcp.InputResponseMap) error { return nil }
func (f *fakeExchange) Close()                            { f.closed.Add(1) }
func (f *fakeExchange) Stateless() bool                   { return false }

func TestParkingTakeOnce(t *testing.T) {
	m := NewMemoryParking(nil)
	ex := &fakeExchange{}
	id, err := m.Park(&Parked{Exchange: ex})
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := m.Take(id); !ok || p.Exchange != ex {
		t.Fatalf("Take = %v, %v", p, ok)
	}
	if _, ok := m.Take(id); ok {
		t.Error("a parked call was taken twice")
	}
	if _, ok := m.Take("guess"); ok {
		t.Error("an unknown id was taken")
	}
	m.Close()
	if ex.closed.Load() != 0 {
		t.Error("Close ended a call that was taken")
	}
}

func TestParkingBounds(t *testing.T) {
	m := NewMemoryParking(&MemoryParkingOptions{Max: 2, TTL: time.Hour})
	a, b := &fakeExchange{}, &fakeExchange{}
	m.Park(&Parked{Exchange: a})
	m.Park(&Parked{Exchange: b})
	if _, err := m.Park(&Parked{Exchange: &fakeExchange{}}); !errors.Is(err, ErrParkingFull) {
		t.Errorf("third park: %v, want ErrParkingFull", err)
	}
	m.Close()
	if a.closed.Load() != 1 || b.closed.Load() != 1 {
		t.Error("Close did not end the parked calls")
	}
	if _, err := m.Park(&Parked{Exchange: &fakeExchange{}}); err == nil {
		t.Error("parked after Close")
	}
}

// One principal fills only its share of the parking.
func TestParkingSharePerPrincipal(t *testing.T) {
	m := NewMemoryParking(&MemoryParkingOptions{Max: 4, MaxPerPrincipal: 2, TTL: time.Hour})
	defer m.Close()
	first, _ := m.Park(&Parked{Exchange: &fakeExchange{}, Principal: "mallory"})
	m.Park(&Parked{Exchange: &fakeExchange{}, Principal: "mallory"})
	if _, err := m.Park(&Parked{Exchange: &fakeExchange{}, Principal: "mallory"}); !errors.Is(err, ErrParkingFull) {
		t.Errorf("mallory's third park: %v, want ErrParkingFull", err)
	}
	if _, err := m.Park(&Parked{Exchange: &fakeExchange{}, Principal: "alice"}); err != nil {
		t.Errorf("alice's park while mallory is at her share: %v", err)
	}
	m.Take(first)
	if _, err := m.Park(&Parked{Exchange: &fakeExchange{}, Principal: "mallory"}); err != nil {
		t.Errorf("mallory's park after one of hers was taken: %v", err)
	}
}

func TestParkingExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMemoryParking(nil)
		defer m.Close()
		ex := &fakeExchange{}
		id, _ := m.Park(&Parked{Exchange: ex})
		time.Sleep(DefaultParkedTTL - time.Second)
		synctest.Wait()
		if ex.closed.Load() != 0 {
			t.Fatal("a call was ended before its time")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if ex.closed.Load() != 1 {
			t.Fatal("an expired call was not ended")
		}
		if _, ok := m.Take(id); ok {
			t.Error("an expired call could be taken")
		}
	})
}

func TestKeys(t *testing.T) {
	for k, want := range map[string]string{
		"confirm":              "confirm",
		"preflight/confirm":    "upstream/preflight/confirm",
		"preflight.approval":   "upstream/preflight.approval",
		"upstream/x":           "upstream/upstream/x",
		"elicitation/create#1": "elicitation/create#1",
	} {
		if got := escapeKey(k); got != want {
			t.Errorf("escapeKey(%q) = %q, want %q", k, got, want)
		}
		back := unescapeAnswers(mcp.InputResponseMap{want: &mcp.ElicitResult{}})
		if _, ok := back[k]; !ok || len(back) != 1 {
			t.Errorf("unescape(%q) = %v, want key %q", want, back, k)
		}
	}
	// The gateway's own keys never reach an upstream.
	if got := unescapeAnswers(mcp.InputResponseMap{"preflight/mine": &mcp.ElicitResult{}, "preflight.approval": &mcp.ElicitResult{}}); len(got) != 0 {
		t.Errorf("the gateway's key was forwarded: %v", got)
	}
}

func TestUndeclared(t *testing.T) {
	q := func(p mcp.InputRequest) []*upstream.Question { return []*upstream.Question{{Method: "m", Params: p}} }
	form := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}
	for _, tc := range []struct {
		qs   []*upstream.Question
		caps *mcp.ClientCapabilities
		want bool // undeclared
	}{
		{q(&mcp.ElicitParams{}), nil, true},
		{q(&mcp.ElicitParams{}), form, false},
		{q(&mcp.ElicitParams{Mode: "url"}), form, true},
		{q(&mcp.CreateMessageWithToolsParams{}), form, true},
		{q(&mcp.CreateMessageWithToolsParams{}), &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}, false},
		{q(&mcp.ListRootsParams{}), &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}}, false},
		{q(&mcp.ListRootsParams{}), form, true},
	} {
		if got := undeclared(tc.qs, tc.caps) != ""; got != tc.want {
			t.Errorf("undeclared(%T, %+v) = %v", tc.qs[0].Params, tc.caps, got)
		}
	}
}
