package entry

import (
	"net/http"
	"time"
)

// WriteTimeout bounds each write to a client: a client that reads nothing
// of a response for this long is cut off, so that a peer that stops
// reading holds no call, no stream and no upstream notification for more
// than that.
const WriteTimeout = 30 * time.Second

// deadlineWriter is a ResponseWriter whose every write and flush must
// complete within WriteTimeout. The SDK's streams, the entry's own and
// the passthroughs all write through it.
type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
}

func withWriteDeadlines(w http.ResponseWriter) *deadlineWriter {
	return &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w)}
}

func (d *deadlineWriter) arm() { _ = d.rc.SetWriteDeadline(time.Now().Add(WriteTimeout)) }

// disarm clears the deadline when the handler returns: the connection
// may serve further requests, and net/http's own last writes must not
// meet a stale deadline.
func (d *deadlineWriter) disarm() { _ = d.rc.SetWriteDeadline(time.Time{}) }

func (d *deadlineWriter) Write(p []byte) (int, error) {
	d.arm()
	return d.ResponseWriter.Write(p)
}

func (d *deadlineWriter) WriteHeader(code int) {
	d.arm()
	d.ResponseWriter.WriteHeader(code)
}

// FlushError implements the flush of http.ResponseController.
func (d *deadlineWriter) FlushError() error {
	d.arm()
	return d.rc.Flush()
}

// Flush implements http.Flusher.
func (d *deadlineWriter) Flush() { _ = d.FlushError() }

// Unwrap gives http.ResponseController the underlying writer.
func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }
