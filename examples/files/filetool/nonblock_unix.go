//go:build unix

package filetool

import "syscall"

// nonBlocking opens a named pipe without waiting for its other end; it has
// no effect on regular files.
const nonBlocking = syscall.O_NONBLOCK
