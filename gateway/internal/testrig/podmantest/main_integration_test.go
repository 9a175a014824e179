//go:build integration

package podmantest

import "testing"

func TestMain(m *testing.M) { Main(m) }
