//go:build !unix

package foldertool

// nonBlocking is zero where opening a file cannot wait for a peer.
const nonBlocking = 0
