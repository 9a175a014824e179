//go:build unix

package foldertool

import "syscall"

// nonBlocking opens a named pipe without waiting for its other end; it has
// no effect on folders.
const nonBlocking = syscall.O_NONBLOCK
