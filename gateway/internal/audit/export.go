package audit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/hints"
)

// jsonRecord is a Record in JSON Lines: stable names, times in RFC 3339
// (UTC, microseconds), the latency in microseconds.
type jsonRecord struct {
	ID          int64           `json:"id"`
	Time        string          `json:"time"`
	Principal   string          `json:"principal"`
	Server      string          `json:"server"`
	Tool        string          `json:"tool"`
	SignedInAs  string          `json:"signedInAs,omitempty"`
	Effect      hints.Effect    `json:"effect"`
	Destructive bool            `json:"destructive"`
	Decision    Decision        `json:"decision"`
	Reason      string          `json:"reason,omitempty"`
	Approver    string          `json:"approver,omitempty"`
	DryRun      bool            `json:"dryRun,omitempty"`
	Level       Level           `json:"level"`
	ArgsDigest  string          `json:"argsDigest"`
	Args        json.RawMessage `json:"args,omitempty"`
	Outcome     Outcome         `json:"outcome"`
	Ended       string          `json:"ended,omitempty"`
	LatencyUS   int64           `json:"latencyUs"`
	Retries     int             `json:"retries,omitempty"`
	Redactions  map[string]int  `json:"redactions,omitempty"`
	Error       string          `json:"error,omitempty"`
}

const timeLayout = "2006-01-02T15:04:05.000000Z07:00"

// MarshalJSON encodes r as a line of the JSON Lines export.
func (r *Record) MarshalJSON() ([]byte, error) {
	j := jsonRecord{
		ID: r.ID, Time: r.Time.UTC().Format(timeLayout), Principal: r.Principal, Server: r.Server, Tool: r.Tool,
		SignedInAs: r.SignedInAs, Effect: r.Effect, Destructive: r.Destructive, Decision: r.Decision, Reason: r.Reason,
		Approver: r.Approver, DryRun: r.DryRun, Level: r.Level, ArgsDigest: r.ArgsDigest, Args: r.Args, Outcome: r.Outcome,
		LatencyUS: r.Latency.Microseconds(), Retries: r.Retries, Redactions: r.Redactions, Error: r.Error,
	}
	if !r.Ended.IsZero() {
		j.Ended = r.Ended.UTC().Format(timeLayout)
	}
	if len(j.Args) > 0 && !json.Valid(j.Args) {
		j.Args = note("[omitted: not valid JSON]")
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes a line of the JSON Lines export.
func (r *Record) UnmarshalJSON(b []byte) error {
	var j jsonRecord
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	t, err := time.Parse(time.RFC3339Nano, j.Time)
	if err != nil {
		return fmt.Errorf("audit record time: %w", err)
	}
	var ended time.Time
	if j.Ended != "" {
		if ended, err = time.Parse(time.RFC3339Nano, j.Ended); err != nil {
			return fmt.Errorf("audit record ended: %w", err)
		}
	}
	*r = Record{
		ID: j.ID, Time: t.UTC(), Principal: j.Principal, Server: j.Server, Tool: j.Tool, SignedInAs: j.SignedInAs,
		Effect: j.Effect, Destructive: j.Destructive, Decision: j.Decision, Reason: j.Reason, Approver: j.Approver, DryRun: j.DryRun,
		Level: j.Level, ArgsDigest: j.ArgsDigest, Args: j.Args, Outcome: j.Outcome, Ended: ended.UTC(),
		Latency: time.Duration(j.LatencyUS) * time.Microsecond, Retries: j.Retries, Redactions: j.Redactions, Error: j.Error,
	}
	if ended.IsZero() {
		r.Ended = time.Time{}
	}
	return nil
}

// WriteJSONL writes the records as JSON Lines, one object per line, and
// returns how many it wrote; it stops at the first error of records or w.
func WriteJSONL(w io.Writer, records iter.Seq2[*Record, error]) (int, error) {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	n := 0
	for r, err := range records {
		if err != nil {
			_ = bw.Flush()
			return n, err
		}
		if err := enc.Encode(r); err != nil {
			return n, err
		}
		n++
	}
	return n, bw.Flush()
}

// WriteText writes the records for a person, one line each:
//
//	TIME ID PRINCIPAL SERVER/TOOL EFFECT DECISION OUTCOME LATENCY [details]
//
// with whose grant the upstream requests carried (signedInAs), the
// approver, retries, redactions, reason and error as key=value details. Every text that came from a client or a server is stripped of
// control characters, escape sequences and bidirectional overrides.
func WriteText(w io.Writer, records iter.Seq2[*Record, error]) (int, error) {
	bw := bufio.NewWriter(w)
	n := 0
	for r, err := range records {
		if err != nil {
			_ = bw.Flush()
			return n, err
		}
		bw.WriteString(textLine(r))
		bw.WriteByte('\n')
		n++
	}
	return n, bw.Flush()
}

func textLine(r *Record) string {
	principal := r.Principal
	if principal == "" {
		principal = "-"
	}
	effect := string(r.Effect)
	if effect == "" {
		effect = "-"
	}
	if r.Destructive {
		effect += "!"
	}
	decision := string(r.Decision)
	if r.DryRun {
		decision += "(dry-run)"
	}
	latency := "-"
	if !r.Ended.IsZero() {
		latency = r.Latency.String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %6d %-12s %-32s %-9s %-8s %-14s %s",
		r.Time.UTC().Format(timeLayout), r.ID, text.Sanitize(principal), text.Sanitize(r.Server+"/"+r.Tool),
		text.Sanitize(effect), text.Sanitize(decision), text.Sanitize(string(r.Outcome)), latency)
	if r.SignedInAs != "" {
		fmt.Fprintf(&b, " signedInAs=%s", quoteText(r.SignedInAs))
	}
	if r.Approver != "" {
		fmt.Fprintf(&b, " approver=%s", quoteText(r.Approver))
	}
	if r.Retries > 0 {
		fmt.Fprintf(&b, " retries=%d", r.Retries)
	}
	if len(r.Redactions) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(r.Redactions)) {
			parts = append(parts, text.Sanitize(k)+":"+strconv.Itoa(r.Redactions[k]))
		}
		fmt.Fprintf(&b, " redacted=%s", strings.Join(parts, ","))
	}
	if r.Reason != "" {
		fmt.Fprintf(&b, " reason=%s", quoteText(r.Reason))
	}
	if r.Error != "" {
		fmt.Fprintf(&b, " error=%s", quoteText(r.Error))
	}
	return b.String()
}

// quoteText returns s sanitized, on one line, in double quotes when it has
// spaces or quotes.
func quoteText(s string) string {
	s = strings.Join(strings.Fields(text.Sanitize(s)), " ")
	if strings.ContainsAny(s, " \"") || s == "" {
		return strconv.Quote(s)
	}
	return s
}
