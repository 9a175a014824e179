//go:build unix

package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// ownedPrivately reports, as an error, a file that is not the user's
// alone: owned by another user, or open to the group or others.
func ownedPrivately(fi fs.FileInfo) error {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return errors.New("owned by another user")
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("mode %v: others may read or write it", perm)
	}
	return nil
}
