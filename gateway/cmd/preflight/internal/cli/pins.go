package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/user"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/internal/pin"
	"github.com/preflightmcp/preflight/gateway/internal/pin/sqlstore"
	"github.com/preflightmcp/preflight/gateway/internal/text"
)

type pinsCmd struct {
	common
	store  string
	config string
	server string
	state  string
	as     string
}

func (c *pinsCmd) synopsis() string {
	return `usage: preflight pins [-store STORE | -config FILE] [flags] list
       preflight pins [-store STORE | -config FILE] [flags] show SERVER TOOL
       preflight pins [-store STORE | -config FILE] [flags] approve SERVER TOOL FINGERPRINT

Shows and approves the gateway's pinned tool definitions. The gateway pins
the first definition of each upstream tool it lists (name, title,
description, schemas, annotations and mcp.dev/ policy hints, fingerprinted
over canonical JSON); a later change is quarantined (calls refused),
changed (listed and callable, in warn mode) or accepted, as the server's
pin setting says, until someone approves it.

  list       every pinned tool: its state, since when, the fingerprint of
             the definition awaiting approval (or of the pinned one) and
             what changed (-server, -state narrow it)
  show       one tool: both fingerprints, who approved the pin, and what
             changed, field by field, with the command that approves it
  approve    make the definition with FINGERPRINT (from show) the pinned
             one; the gateway releases the tool within a second. Approving
             a fingerprint that is no longer the one awaiting approval (the
             server changed the tool again) fails: show it again

STORE is the gateway's pin store: sqlite:PATH (the embedded default) or a
PostgreSQL URL (postgres://USER@HOST/DATABASE). -config FILE reads it from
the pins section of the gateway's configuration file, as preflight serve
-config FILE does; without either, it is the default of a configuration
without a pins section: pins.db in the user's state directory
($XDG_STATE_HOME/preflight, else ~/.local/state/preflight). Text output escapes control
characters of server text (descriptions, names); -format json writes the
records, definitions and diffs as data.

Exit status: 0 done; 1 the tool has no pin, nothing awaits approval, or
the fingerprint is not the one awaiting approval; 2 usage error; 3 the
store could not be opened or read, or the output could not be written.

Examples:

  preflight pins -config gateway.yaml list -state quarantined
  preflight pins -store sqlite:pins.db show files delete_file
  preflight pins -store sqlite:pins.db approve files delete_file 3q0b...
  preflight pins -store postgres://preflight@db/preflight -json list
`
}

func (c *pinsCmd) flags(fs *flag.FlagSet) {
	c.bindOutput(fs, []string{"text", "json"}, "json")
	c.bindTimeout(fs)
	fs.StringVar(&c.store, "store", "", "the pin store: sqlite:PATH or postgres://USER@HOST/DATABASE (default: the pins section of -config, else pins.db in the user's state directory)")
	fs.StringVar(&c.config, "config", "", "the gateway's configuration `FILE`, whose pins section names the store")
	fs.StringVar(&c.server, "server", "", "list: this upstream server's tools only")
	fs.StringVar(&c.state, "state", "", "list: tools in this state only: pinned, changed or quarantined")
	fs.StringVar(&c.as, "as", "", "approve: the approver's name recorded with the pin (default: the user running the command)")
}

func (c *pinsCmd) run(ctx context.Context, env *env, inv invocation) error {
	if inv.dashDash {
		return usagef("pins takes no command after --")
	}
	if len(inv.args) == 0 {
		return usagef("missing subcommand: list, show or approve")
	}
	sub, args := inv.args[0], inv.args[1:]
	want := map[string]int{"list": 0, "show": 2, "approve": 3}
	n, ok := want[sub]
	switch {
	case !ok:
		return usagef("unknown subcommand %q: want list, show or approve", sub)
	case len(args) != n && sub == "list":
		return usagef("list takes no arguments (narrow it with -server and -state)")
	case len(args) != n:
		return usagef("%s takes %s", sub, map[string]string{"show": "SERVER TOOL", "approve": "SERVER TOOL FINGERPRINT"}[sub])
	case c.store != "" && c.config != "":
		return usagef("-store and -config both name the store: give one")
	case c.state != "" && !slices.Contains([]pin.State{pin.StatePinned, pin.StateChanged, pin.StateQuarantined}, pin.State(c.state)):
		return usagef("-state %q: want pinned, changed or quarantined", c.state)
	case (c.server != "" || c.state != "") && sub != "list":
		return usagef("-server and -state narrow list only")
	case c.as != "" && sub != "approve":
		return usagef("-as names the approver of approve only")
	}
	if c.store == "" {
		var err error
		if c.store, err = c.configStore(); err != nil {
			return err
		}
	}
	if strings.HasPrefix(c.store, "sqlite:") {
		// Opening creates a missing file; a command that reads must not.
		if _, err := os.Stat(strings.TrimPrefix(c.store, "sqlite:")); err != nil {
			if c.config == "" && errors.Is(err, os.ErrNotExist) {
				err = fmt.Errorf("%w (no -store or -config: this is the default store)", err)
			}
			return couldNotRun(fmt.Errorf("the store: %w", err))
		}
	}
	store, err := sqlstore.Open(ctx, c.store)
	if err != nil {
		if strings.Contains(err.Error(), "want sqlite:PATH") {
			return usagef("-store: want sqlite:PATH or postgres://USER@HOST/DATABASE")
		}
		return couldNotRun(err)
	}
	defer store.Close()

	switch sub {
	case "list":
		return c.list(ctx, env, store)
	case "show":
		return c.show(ctx, env, store, args[0], args[1])
	}
	return c.approve(ctx, env, store, args[0], args[1], args[2])
}

// configStore returns the store of -config's pins section, or the default
// one of a configuration without it.
func (c *pinsCmd) configStore() (string, error) {
	var pins config.Pins
	if c.config != "" {
		cfg, err := config.Load(c.config)
		if err != nil {
			return "", couldNotRun(err)
		}
		pins = cfg.Pins
	}
	spec, err := pins.Spec()
	if err != nil {
		return "", couldNotRun(err)
	}
	return spec, nil
}

// pinView is a record for JSON output.
type pinView struct {
	Server       string    `json:"server"`
	Tool         string    `json:"tool"`
	State        pin.State `json:"state"`
	Pinned       string    `json:"pinned"`
	PinnedAt     time.Time `json:"pinnedAt"`
	ApprovedBy   string    `json:"approvedBy,omitempty"`
	Pending      string    `json:"pending,omitempty"`
	PendingSince time.Time `json:"pendingSince,omitzero"`
	// Changed sums up what changed; Diff (show only) lists it.
	Changed           string          `json:"changed,omitempty"`
	Diff              *pin.Diff       `json:"diff,omitempty"`
	PinnedDefinition  *pin.Definition `json:"pinnedDefinition,omitempty"`
	PendingDefinition *pin.Definition `json:"pendingDefinition,omitempty"`
}

func viewPin(r *pin.Record, full bool) (pinView, *pin.Diff) {
	v := pinView{Server: r.Server, Tool: r.Tool, State: r.State, Pinned: r.Pinned.Fingerprint(), PinnedAt: r.PinnedAt,
		ApprovedBy: r.ApprovedBy, PendingSince: r.PendingSince}
	var d *pin.Diff
	if r.Pending != nil {
		v.Pending = r.Pending.Fingerprint()
		d = pin.Compare(r.Pinned, r.Pending)
		v.Changed = d.Summary()
	}
	if full {
		v.Diff, v.PinnedDefinition, v.PendingDefinition = d, r.Pinned, r.Pending
	}
	return v, d
}

func (c *pinsCmd) list(ctx context.Context, env *env, store pin.Store) error {
	recs, err := store.List(ctx, c.server)
	if err != nil {
		return couldNotRun(fmt.Errorf("reading the store: %w", err))
	}
	views := []pinView{}
	for _, r := range recs {
		if c.state == "" || r.State == pin.State(c.state) {
			v, _ := viewPin(r, false)
			views = append(views, v)
		}
	}
	if c.format == "json" {
		return writeJSON(env.stdout, views)
	}
	if len(views) == 0 {
		fmt.Fprintln(env.stdout, "no pinned tools")
		return nil
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tTOOL\tSTATE\tSINCE\tFINGERPRINT\tCHANGED")
	for _, v := range views {
		since, fp := v.PinnedAt, v.Pinned
		if v.Pending != "" {
			since, fp = v.PendingSince, v.Pending
		}
		changed := v.Changed
		if changed == "" {
			changed = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", text.OneLine(v.Server), text.OneLine(v.Tool), v.State,
			since.UTC().Format("2006-01-02 15:04 UTC"), fp[:min(len(fp), 12)], text.OneLine(changed))
	}
	return tw.Flush()
}

func (c *pinsCmd) show(ctx context.Context, env *env, store pin.Store, server, tool string) error {
	r, err := store.Get(ctx, server, tool)
	if err != nil {
		return c.storeError(err, server, tool)
	}
	v, d := viewPin(r, true)
	if c.format == "json" {
		return writeJSON(env.stdout, v)
	}
	w := env.stdout
	fmt.Fprintf(w, "%s of server %s: %s\n", quoteArg(tool), quoteArg(server), stateText(r))
	approved := "pinned at first sight"
	if r.ApprovedBy != "" {
		approved = "approved by " + r.ApprovedBy
	}
	fmt.Fprintf(w, "  pinned   %s  %s, %s\n", v.Pinned, approved, r.PinnedAt.UTC().Format(time.RFC3339))
	if r.Pending == nil {
		return nil
	}
	fmt.Fprintf(w, "  served   %s  since %s\n\nWhat changed:\n", v.Pending, r.PendingSince.UTC().Format(time.RFC3339))
	for line := range strings.Lines(d.String()) {
		fmt.Fprint(w, "  "+line)
	}
	where := "-store " + quoteArg(redactStore(c.store))
	if c.config != "" {
		where = "-config " + quoteArg(c.config)
	}
	fmt.Fprintf(w, "\nApprove it with:\n  preflight pins %s approve %s %s %s\n", where, quoteArg(server), quoteArg(tool), v.Pending)
	return nil
}

func stateText(r *pin.Record) string {
	switch r.State {
	case pin.StateQuarantined:
		return "quarantined: its definition changed; calls are refused until it is approved"
	case pin.StateChanged:
		return "changed: its definition changed; it stays callable (warn mode) until it is approved"
	}
	return "pinned: the server serves the pinned definition"
}

func (c *pinsCmd) approve(ctx context.Context, env *env, store pin.Store, server, tool, fingerprint string) error {
	approver := c.as
	if approver == "" {
		if u, err := user.Current(); err == nil {
			approver = u.Username
		}
	}
	if strings.TrimSpace(approver) == "" {
		return usagef("no approver: give -as NAME")
	}
	r, err := pin.New(store, nil).Approve(ctx, server, tool, fingerprint, approver)
	if err != nil {
		return c.storeError(err, server, tool)
	}
	if c.format == "json" {
		v, _ := viewPin(r, false)
		return writeJSON(env.stdout, v)
	}
	fmt.Fprintf(env.stdout, "approved: %s of server %s is pinned to %s (by %s); the gateway releases it within a second\n",
		quoteArg(tool), quoteArg(server), r.Pinned.Fingerprint(), r.ApprovedBy)
	return nil
}

// storeError says what a store's error means for the command.
func (c *pinsCmd) storeError(err error, server, tool string) error {
	switch {
	case errors.Is(err, pin.ErrNotFound):
		return fmt.Errorf("no pin of tool %s of server %s (see preflight pins list)", quoteArg(tool), quoteArg(server))
	case errors.Is(err, pin.ErrNothingPending):
		return fmt.Errorf("tool %s of server %s serves its pinned definition: nothing to approve", quoteArg(tool), quoteArg(server))
	case errors.Is(err, pin.ErrStale):
		return fmt.Errorf("%v: the server changed the tool again since that fingerprint was shown; review it with preflight pins show %s %s", err, quoteArg(server), quoteArg(tool))
	}
	return couldNotRun(fmt.Errorf("the store: %w", err))
}

// redactStore hides the password of a PostgreSQL URL.
func redactStore(spec string) string {
	if u, err := url.Parse(spec); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			return u.Redacted()
		}
	}
	return spec
}

// quoteArg writes s as a command-line word, quoted when it needs it.
func quoteArg(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_.-/:@+=,", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
