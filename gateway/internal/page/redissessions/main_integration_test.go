//go:build integration

package redissessions_test

import (
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/testrig/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }
