package cli

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/internal/setup"
)

// optionsFromConfig maps the configuration read from path (package
// gateway/config parses the formats and reports their errors) onto
// gateway.Options (package setup), opening its stores within ctx.
func optionsFromConfig(ctx context.Context, path string, cfg *config.Config, logger *slog.Logger) (*gateway.Options, error) {
	opts, err := setup.Options(ctx, cfg, logger)
	if err != nil {
		return nil, &exitError{code: exitFailure, err: fmt.Errorf("-config %s: %w", path, err)}
	}
	return opts, nil
}
