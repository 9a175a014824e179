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

// WriteDeadlines bounds every write of h's responses by WriteTimeout,
// net/http's own last writes after h returns (a buffered body, the end of
// a chunked one) included. It belongs at the top of a server: the
// deadline it leaves on the connection is renewed by the next response's
// first write.
func WriteDeadlines(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := withWriteDeadlines(w)
		h.ServeHTTP(d, r)
		d.arm()
	})
}

func withWriteDeadlines(w http.ResponseWriter) *deadlineWriter {
	return &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w)}
}

func (d *deadlineWriter) arm() { _ = d.rc.SetWriteDeadline(time.Now().Add(WriteTimeout)) }

// disarm clears the deadline when a handler that was not under
// WriteDeadlines returns: the connection may serve further requests whose
// handlers set no deadline of their own.
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
