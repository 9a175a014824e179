//go:build !unix

package cli

import "io/fs"

// ownedPrivately accepts every file where ownership is not in Unix terms
// (the file's ACL is the user profile's).
func ownedPrivately(fs.FileInfo) error { return nil }
