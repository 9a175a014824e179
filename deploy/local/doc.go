// Package local checks the single-machine topology of this directory: the
// HAProxy config (haproxy.cfg), run by Debian's haproxy in front of real MCP
// endpoints of both protocol eras, and the run script, which starts Redis,
// PostgreSQL, the replicas and HAProxy and stops them all on Ctrl-C. The
// package has no other code.
package local
