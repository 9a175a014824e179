//go:build integration

package redisstore_test

import (
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/testrig/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }
