//go:build unix && !aix && (!solaris || illumos)

package npmdeps

import (
	"fmt"
	"os"
	"syscall"
)

// lockDir takes an exclusive advisory lock (flock) on the directory dir,
// waiting for it if another process holds it. Locking the directory, not a
// file in it, leaves nothing behind for .gitignore, and npm ci does not
// remove the directory itself.
func lockDir(dir string) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %v", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %v", dir, err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
