package audit_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/audit"
)

// batchStore records the size of each Write, each one transaction; the
// other methods are not called for reads.
type batchStore struct {
	audit.Store
	mu      sync.Mutex
	batches []int
}

func (s *batchStore) Write(_ context.Context, rs []*audit.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = append(s.batches, len(rs))
	return nil
}

func (s *batchStore) written() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.batches)
}

// endReads starts and ends n reads.
func endReads(t *testing.T, a *audit.Auditor, n int) {
	t.Helper()
	for i := range n {
		e, err := a.Start(t.Context(), read(i))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.End(t.Context(), audit.Ending{Outcome: audit.OutcomeOK}); err != nil {
			t.Fatal(err)
		}
	}
}

func wantBatches(t *testing.T, s *batchStore, when string, want ...int) {
	t.Helper()
	if got := s.written(); !slices.Equal(got, want) {
		t.Errorf("%s: batches written %v, want %v", when, got, want)
	}
}

// TestGroupCommit: the records that end within one window are written in
// one transaction when it passes, or as soon as BatchSize of them wait.
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const window = 2 * time.Millisecond
		s := &batchStore{}
		a, err := audit.New(s, &audit.Options{Window: window, BatchSize: 4})
		if err != nil {
			t.Fatal(err)
		}
		endReads(t, a, 3)
		synctest.Wait()
		wantBatches(t, s, "within the window")
		time.Sleep(window)
		synctest.Wait()
		wantBatches(t, s, "after the window", 3)

		endReads(t, a, 10)
		synctest.Wait()
		wantBatches(t, s, "full batches", 3, 4, 4)
		time.Sleep(window)
		synctest.Wait()
		wantBatches(t, s, "the rest after the window", 3, 4, 4, 2)
		if err := a.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		if st := a.Stats(); st.Written != 13 || st.Dropped != 0 {
			t.Errorf("stats %+v, want 13 written", st)
		}
	})
}

// TestCloseFlushesWindow: Close writes the records gathered in the window
// at once, and its goroutine ends.
func TestCloseFlushesWindow(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := &batchStore{}
		a, err := audit.New(s, &audit.Options{Window: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		endReads(t, a, 3)
		if err := a.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		wantBatches(t, s, "after Close", 3)
		if waited := time.Since(start); waited != 0 {
			t.Errorf("Close waited %v for the window", waited)
		}
	})
}

// TestNoWindow: a negative window writes what is queued without waiting.
func TestNoWindow(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := &batchStore{}
		a, err := audit.New(s, &audit.Options{Window: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close(t.Context())
		endReads(t, a, 3)
		synctest.Wait()
		n := 0
		for _, b := range s.written() {
			n += b
		}
		if n != 3 {
			t.Errorf("batches %v without a window, want 3 records written", s.written())
		}
	})
}
