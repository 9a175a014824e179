//go:build !unix || aix || (solaris && !illumos)

package npmdeps

// lockDir is a no-op where flock is unavailable: concurrent first runs of
// npm ci from several test binaries are then not serialized.
func lockDir(string) (func(), error) { return func() {}, nil }
