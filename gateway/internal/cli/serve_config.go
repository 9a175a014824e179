package cli

import (
	"fmt"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/config"
)

// optionsFromConfig maps the configuration read from path (package
// gateway/config parses the formats and reports their errors) onto
// gateway.Options.
func optionsFromConfig(path string, cfg *config.Config) (*gateway.Options, error) {
	opts, err := gateway.OptionsFromConfig(cfg)
	if err != nil {
		return nil, &exitError{code: exitFailure, err: fmt.Errorf("-config %s: %w", path, err)}
	}
	return opts, nil
}
