package disclose

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Source gives the author's [Details] of tools by name. A Source must be
// safe for concurrent use. [Dir] is one; a [Server] also accepts details
// in code ([Server.SetDetails]), which win over the Source.
type Source interface {
	// Details returns the details of the named tool, nil if none. The
	// returned value must not be modified; a Source that changes returns
	// a new *Details, so that its identity says whether it changed.
	Details(name string) *Details
}

// maxDetailsFile bounds one file of a [Dir].
const maxDetailsFile = 4 << 20

// DirOptions configure [OpenDir]. The zero value is ready to use.
type DirOptions struct {
	// Poll, if positive, rescans the folder at this interval instead of
	// watching it with the operating system's file notifications (for
	// file systems that have none, such as some network mounts).
	Poll time.Duration
	// OnReload, if set, is called after every reload that was caused by
	// a change, with the folder's new version and the joined errors of
	// the files that could not be read (their previous details are kept).
	// It runs on the watching goroutine; it must not call [Dir.Close].
	OnReload func(version string, err error)
	// Logger receives reload errors. Nil discards them.
	Logger *slog.Logger
}

// Dir is a [Source] backed by a folder holding one JSON file per tool,
// named after the tool ("search_issues.json"), each a [Details] object
// (seed 004 section 7.1). It is read when opened and again whenever a file
// in the folder changes. A file that cannot be read or decoded keeps the
// tool's previous details, and the error is reported to [DirOptions.OnReload]
// and the logger; a removed file removes them. Files not ending in .json
// are ignored.
type Dir struct {
	path   string
	opts   DirOptions
	logger *slog.Logger

	mu      sync.RWMutex
	details map[string]*Details
	raw     map[string][]byte // file content per tool, to skip unchanged files
	version string

	watcher *fsnotify.Watcher
	stop    chan struct{}
	done    chan struct{}
	close   sync.Once
}

// OpenDir reads the folder at path and starts watching it. A file that
// cannot be read or decoded makes OpenDir fail, naming it (a bad folder
// at startup is a deployment error); later reloads keep going. Call
// [Dir.Close] to stop watching.
func OpenDir(path string, opts *DirOptions) (*Dir, error) {
	d := &Dir{path: path, details: map[string]*Details{}, raw: map[string][]byte{},
		stop: make(chan struct{}), done: make(chan struct{})}
	if opts != nil {
		d.opts = *opts
	}
	d.logger = d.opts.Logger
	if d.logger == nil {
		d.logger = slog.New(slog.DiscardHandler)
	}
	if err := d.reload(); err != nil {
		return nil, err
	}
	if d.opts.Poll <= 0 {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			return nil, fmt.Errorf("disclose: watching %s: %w", path, err)
		}
		if err := w.Add(path); err != nil {
			w.Close()
			return nil, fmt.Errorf("disclose: watching %s: %w", path, err)
		}
		d.watcher = w
		go d.watch()
	} else {
		go d.poll()
	}
	return d, nil
}

// Details implements [Source].
func (d *Dir) Details(name string) *Details {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.details[name]
}

// Version identifies the folder's content: it changes whenever a tool's
// details change. It is a hash, the same in every process reading the
// same files.
func (d *Dir) Version() string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.version
}

// Tools returns the names of the tools the folder describes, sorted.
func (d *Dir) Tools() []string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	names := make([]string, 0, len(d.details))
	for n := range d.details {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Close stops watching the folder and waits for the watcher to finish.
func (d *Dir) Close() error {
	var err error
	d.close.Do(func() {
		close(d.stop)
		if d.watcher != nil {
			err = d.watcher.Close()
		}
		<-d.done
	})
	return err
}

func (d *Dir) watch() {
	defer close(d.done)
	for {
		select {
		case <-d.stop:
			return
		case ev, ok := <-d.watcher.Events:
			if !ok {
				return
			}
			if !strings.HasSuffix(ev.Name, ".json") || ev.Op == fsnotify.Chmod {
				continue
			}
			d.changed()
		case err, ok := <-d.watcher.Errors:
			if !ok {
				return
			}
			d.logger.Error("disclose: watching descriptions", "dir", d.path, "error", err)
		}
	}
}

func (d *Dir) poll() {
	defer close(d.done)
	t := time.NewTicker(d.opts.Poll)
	defer t.Stop()
	lastErr := ""
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
			before := d.Version()
			err := d.reload()
			errText := ""
			if err != nil {
				errText = err.Error()
			}
			// Report changes only: a broken file is reported once, not
			// on every tick.
			if d.Version() != before || errText != lastErr {
				lastErr = errText
				d.report(err)
			}
		}
	}
}

func (d *Dir) changed() {
	d.report(d.reload())
}

func (d *Dir) report(err error) {
	if err != nil {
		d.logger.Error("disclose: reloading descriptions", "dir", d.path, "error", err)
	}
	if d.opts.OnReload != nil {
		d.opts.OnReload(d.Version(), err)
	}
}

// reload rereads every file. Files that fail keep their previous details;
// their errors are joined.
func (d *Dir) reload() error {
	entries, err := os.ReadDir(d.path)
	if err != nil {
		return fmt.Errorf("disclose: reading %s: %w", d.path, err)
	}
	d.mu.RLock()
	details := make(map[string]*Details, len(entries))
	raw := make(map[string][]byte, len(entries))
	prevDetails, prevRaw := d.details, d.raw
	d.mu.RUnlock()
	var errs []error
	for _, e := range entries {
		name, isJSON := strings.CutSuffix(e.Name(), ".json")
		if !isJSON || name == "" || e.IsDir() {
			continue
		}
		b, rerr := readFile(filepath.Join(d.path, e.Name()))
		if rerr == nil && bytes.Equal(b, prevRaw[name]) && prevDetails[name] != nil {
			details[name], raw[name] = prevDetails[name], b // unchanged: same identity
			continue
		}
		var det *Details
		if rerr == nil {
			det, rerr = DecodeDetails(name, b)
		}
		if rerr != nil {
			errs = append(errs, fmt.Errorf("%s: %w", e.Name(), rerr))
			if p, ok := prevDetails[name]; ok {
				details[name], raw[name] = p, prevRaw[name]
			}
			continue
		}
		details[name], raw[name] = det, b
	}
	h := sha256.New()
	names := make([]string, 0, len(raw))
	for n := range raw {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(h, "%d:%s%d:", len(n), n, len(raw[n]))
		h.Write(raw[n])
	}
	d.mu.Lock()
	d.details, d.raw, d.version = details, raw, hex.EncodeToString(h.Sum(nil))[:16]
	d.mu.Unlock()
	return errors.Join(errs...)
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxDetailsFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxDetailsFile {
		return nil, fmt.Errorf("larger than %d bytes", maxDetailsFile)
	}
	return b, nil
}

// DecodeDetails decodes one tool's details as a [Dir] file holds them: a
// JSON object with the fields of [Details] (the seed's full-definition
// fields; unknown fields are refused, so a misspelt field is not silently
// ignored). A name inside must equal tool.
func DecodeDetails(tool string, b []byte) (*Details, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var det Details
	if err := dec.Decode(&det); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON object")
	}
	if det.Name != "" && det.Name != tool {
		return nil, fmt.Errorf("name %q does not match the file's tool %q", det.Name, tool)
	}
	if len(det.InputSchema) > 0 {
		var m map[string]any
		if err := json.Unmarshal(det.InputSchema, &m); err != nil {
			return nil, fmt.Errorf("inputSchema: not a JSON object: %w", err)
		}
	}
	return &det, nil
}
