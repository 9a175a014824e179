package cli

import (
	"fmt"
	"os"
	"path/filepath"
)

// defaultDataDir is the built-in setup's data directory when -data names
// none: preflight/serve under the user's cache directory.
func defaultDataDir() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no user cache directory for the built-in setup's data (%v): give one with -data", err)
	}
	return filepath.Join(cache, "preflight", "serve"), nil
}
