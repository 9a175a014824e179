package servebench

import (
	"os"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	// A command name with spaces and parentheses; utime 250, stime 50 ticks.
	line := "4242 (pre (fl) ight) S 1 4242 4242 0 -1 4194560 1200 0 0 0 250 50 0 0 20 0 9 0 100 0 0\n"
	got, err := parseStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if want := 3 * time.Second; got != want {
		t.Errorf("parseStat = %v, want %v", got, want)
	}
	if _, err := parseStat("4242 (x) S 1 2"); err == nil {
		t.Error("a short line parsed")
	}
}

func TestReadUsage(t *testing.T) {
	u, err := ReadUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if u.RSS <= 0 || u.PeakRSS < u.RSS {
		t.Errorf("RSS %d, peak %d", u.RSS, u.PeakRSS)
	}
}

func TestQuantile(t *testing.T) {
	d := []time.Duration{5, 1, 4, 2, 3}
	if got := Quantile(d, 0.5); got != 3 {
		t.Errorf("median %v", got)
	}
	if got := Quantile(d, 0.99); got != 4 {
		t.Errorf("p99 of 5 (nearest lower rank) %v", got)
	}
	if got := Quantile(nil, 0.5); got != 0 {
		t.Errorf("empty %v", got)
	}
}
