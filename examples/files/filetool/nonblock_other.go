//go:build !unix

package filetool

// nonBlocking is zero where opening a file cannot wait for a peer.
const nonBlocking = 0
