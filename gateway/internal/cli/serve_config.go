package cli

import (
	"fmt"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/config"
)

// loadConfigFile is serve's one seam to configuration files: it reads the
// file at path (package gateway/config parses the formats and reports their
// errors) and maps it onto gateway.Options.
func loadConfigFile(path string) (*gateway.Options, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, &exitError{code: exitFailure, err: err}
	}
	opts, err := gateway.OptionsFromConfig(cfg)
	if err != nil {
		return nil, &exitError{code: exitFailure, err: fmt.Errorf("-config %s: %w", path, err)}
	}
	return opts, nil
}
