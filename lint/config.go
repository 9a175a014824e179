package lint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Config is the lint configuration file. Its one canonical form is JSON:
//
//	{
//	  "ignore": [
//	    {"check": "no-annotations", "tool": "rename_folder",
//	     "reason": "asks the user for the name and to confirm before it acts"}
//	  ]
//	}
//
// Every entry silences one check for one tool, and must say why. "tool":
// "*" silences the check for every tool and for the server-level findings;
// "tool": "" silences only the server-level ones. Unknown fields, unknown
// check ids and entries without a reason are errors.
type Config struct {
	Ignore []Ignore `json:"ignore"`
}

// Ignore silences one check for one tool.
type Ignore struct {
	Check  string `json:"check"`
	Tool   string `json:"tool"`
	Reason string `json:"reason"`
}

// LoadConfig reads and checks a configuration file.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// ParseConfig reads and checks a configuration.
func ParseConfig(data []byte) (*Config, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var cfg Config
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("not a lint configuration (JSON with an \"ignore\" list of {check, tool, reason}): %w", err)
	}
	if dec.More() {
		return nil, errors.New("not a lint configuration: more than one JSON value")
	}
	var errs []error
	for i, ig := range cfg.Ignore {
		if _, ok := LookupCheck(ig.Check); !ok {
			errs = append(errs, fmt.Errorf("ignore[%d]: unknown check %q (known: %s)", i, ig.Check, checkIDs()))
		}
		if strings.TrimSpace(ig.Reason) == "" {
			errs = append(errs, fmt.Errorf("ignore[%d] (%s for %q): a reason is required: say why the check does not apply", i, ig.Check, ig.Tool))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// match returns the index of the first entry that silences f, -1 if none.
func (c *Config) match(f Finding) int {
	for i, ig := range c.Ignore {
		if ig.Check == f.Check && (ig.Tool == f.Tool || ig.Tool == "*") {
			return i
		}
	}
	return -1
}
