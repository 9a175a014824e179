//go:build !unix

package interop

// lockFile is a no-op where flock is unavailable: concurrent first runs of
// npm ci from several test binaries are then not serialized.
func lockFile(string) (func(), error) { return func() {}, nil }
