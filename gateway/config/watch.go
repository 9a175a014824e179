package config

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is how long a changed file must stay quiet before it is
// read again, unless [WatchOptions] says otherwise: editors write a file in
// several steps.
const DefaultDebounce = 100 * time.Millisecond

// WatchOptions configure [Watch]. A nil *WatchOptions means the zero
// value.
type WatchOptions struct {
	// Debounce is how long the file must stay quiet after a change before
	// it is read. Zero means [DefaultDebounce].
	Debounce time.Duration
	// Reload asks for a reload with every value received: a command passes
	// the channel it gave signal.Notify for SIGHUP. Nil means none.
	Reload <-chan os.Signal
	// Env looks up environment variables; nil means os.LookupEnv.
	Env func(string) (string, bool)
	// Logger receives reloads, failed ones and watch errors. Nil discards
	// them.
	Logger *slog.Logger
}

// Watch loads the config file at path as [Load] does and calls fn with
// it, then calls fn again each time the file, or an env file it names,
// changes, and on each value from opts.Reload. A version that fails to
// load is logged and given to fn as its error, with a nil Config: the
// previous one stays in force, and fn is only ever given a valid Config,
// and only one that differs from the previous. fn runs on Watch's
// goroutine. Watch returns nil when ctx is done, or the first load's error
// without calling fn.
//
// Watch watches the directories holding the files, so it follows editors
// that replace a file and mounted volumes that swap a symbolic link.
func Watch(ctx context.Context, path string, opts *WatchOptions, fn func(*Config, error)) error {
	var o WatchOptions
	if opts != nil {
		o = *opts
	}
	if o.Debounce <= 0 {
		o.Debounce = DefaultDebounce
	}
	if o.Env == nil {
		o.Env = os.LookupEnv
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer fw.Close()
	w := &watcher{fw: fw, log: log, watched: map[string]bool{}, files: map[string]bool{}}

	// Watch before the first read, so that no change is missed.
	w.follow(abs, nil)
	cur, err := load(path, o.Env)
	if err != nil {
		return err
	}
	w.follow(abs, cur)
	fn(cur, nil)

	timer := time.NewTimer(o.Debounce)
	timer.Stop()
	defer timer.Stop()
	reload := func(why string) {
		next, err := load(path, o.Env)
		w.follow(abs, next)
		switch {
		case err != nil:
			log.Error("config not reloaded: the previous one stays in force", "file", abs, "trigger", why, "err", err)
			fn(nil, err)
		case reflect.DeepEqual(next, cur):
			log.Debug("config unchanged", "file", abs, "trigger", why)
		default:
			log.Info("config reloaded", "file", abs, "trigger", why)
			cur = next
			fn(cur, nil)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-fw.Events:
			if !ok {
				return nil
			}
			if w.relevant(ev.Name) {
				timer.Reset(o.Debounce)
			}
		case err, ok := <-fw.Errors:
			if !ok {
				return nil
			}
			log.Warn("config watch", "file", abs, "err", err)
		case <-o.Reload:
			reload("signal")
		case <-timer.C:
			reload("file change")
		}
	}
}

// watcher tracks the directories and files a config depends on.
type watcher struct {
	fw      *fsnotify.Watcher
	log     *slog.Logger
	watched map[string]bool // directories
	files   map[string]bool // base names of interest
}

// follow watches the directories of the config file, of its env files and
// of the files their symbolic links point to. Directories are added, never
// removed: one that disappears drops out of the watch by itself.
func (w *watcher) follow(path string, c *Config) {
	paths := []string{path}
	if c != nil {
		for _, name := range c.Names() {
			if f := c.Servers[name].EnvFile; f != "" {
				paths = append(paths, f)
			}
		}
	}
	for _, p := range paths {
		candidates := []string{p}
		if target, err := filepath.EvalSymlinks(p); err == nil && target != p {
			candidates = append(candidates, target)
		}
		for _, f := range candidates {
			w.files[filepath.Base(f)] = true
			dir := filepath.Dir(f)
			if w.watched[dir] {
				continue
			}
			if err := w.fw.Add(dir); err != nil {
				w.log.Warn("config watch", "dir", dir, "err", err)
				continue
			}
			w.watched[dir] = true
		}
	}
}

// relevant reports whether a change to name may change the config: one of
// the files, or a link swapped as mounted volumes do ("..data").
func (w *watcher) relevant(name string) bool {
	base := filepath.Base(name)
	return w.files[base] || strings.HasPrefix(base, "..")
}
