//go:build !integration

package state_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// externalDeployments is empty: Redis is tested in the integration build.
func externalDeployments() []deployment { return nil }
