package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/pem"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The image's file layout. The Containerfile at the repository's root
// makes the same; TestContainerfile holds the two together.
const (
	BinaryPath = "/usr/local/bin/preflight"
	CertsPath  = "/etc/ssl/certs/ca-certificates.crt"
	ConfigDir  = "/etc/preflight"
	// DataDir is the state directory: HOME and XDG_STATE_HOME, owned by
	// the user, the one writable place a read-only root filesystem needs
	// (with /tmp).
	DataDir = "/data"
	// UID and GID are the non-root user the gateway runs as; the chart's
	// securityContext names the same.
	UID      = 65532
	GID      = 65532
	UserName = "preflight"
)

// entry is one file or directory of a layer.
type entry struct {
	path     string // absolute, in the image
	mode     int64  // permission bits, with 01000 for sticky
	uid, gid int
	dir      bool
	data     []byte
}

// baseEntries are the files every architecture shares: the user, the CA
// certificates, the state and temporary directories.
func baseEntries() []entry {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:%s:/sbin/nologin\n", UserName, UID, GID, UserName, DataDir)
	group := fmt.Sprintf("root:x:0:\n%s:x:%d:\n", UserName, GID)
	return []entry{
		{path: "/etc", mode: 0o755, dir: true},
		{path: "/etc/group", mode: 0o644, data: []byte(group)},
		{path: "/etc/passwd", mode: 0o644, data: []byte(passwd)},
		{path: ConfigDir, mode: 0o755, dir: true},
		{path: "/etc/ssl", mode: 0o755, dir: true},
		{path: "/etc/ssl/certs", mode: 0o755, dir: true},
		{path: CertsPath, mode: 0o644, data: caBundle()},
		{path: DataDir, mode: 0o755, uid: UID, gid: GID, dir: true},
		{path: "/tmp", mode: 0o1777, dir: true},
	}
}

// binaryEntries put the preflight binary at BinaryPath.
func binaryEntries(binary []byte) []entry {
	return []entry{
		{path: "/usr", mode: 0o755, dir: true},
		{path: "/usr/local", mode: 0o755, dir: true},
		{path: "/usr/local/bin", mode: 0o755, dir: true},
		{path: BinaryPath, mode: 0o755, data: binary},
	}
}

// caBundle is the Mozilla root store as golang.org/x/crypto/x509roots/fallback
// pins it, in PEM. Roots carrying a constraint (distrusted after a date)
// are left out: a PEM file cannot say so.
func caBundle() []byte {
	var b bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate})
	}
	return b.Bytes()
}

// layer writes entries as a gzipped tar, sorted by path, every time
// modTime, owners numeric only: the same entries give the same bytes.
func layer(entries []entry, modTime time.Time) (v1.Layer, error) {
	entries = slices.Clone(entries)
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.path, b.path) })
	var tarred bytes.Buffer
	tw := tar.NewWriter(&tarred)
	for _, e := range entries {
		h := &tar.Header{
			Name:    strings.TrimPrefix(e.path, "/"),
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.gid,
			ModTime: modTime.UTC().Truncate(time.Second),
			Format:  tar.FormatUSTAR,
		}
		if e.dir {
			h.Typeflag = tar.TypeDir
			h.Name += "/"
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer: %s: %w", e.path, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("layer: %s: %w", e.path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	var zipped bytes.Buffer
	zw, err := gzip.NewWriterLevel(&zipped, gzip.DefaultCompression) // no name, no time: the same bytes each time; best compression saves under 1% for 3 times the time
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(tarred.Bytes()); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(opener(zipped.Bytes()), tarball.WithMediaType(types.OCILayer))
}

func opener(b []byte) tarball.Opener {
	return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
}
