package image

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// The names Write gives its outputs in the output directory.
const (
	LayoutDir   = "preflight.oci"
	ArchiveFile = "preflight.oci.tar"
)

// Write writes b into dir as an OCI layout directory (LayoutDir) and as the
// same directory in one tar file (ArchiveFile, an oci-archive for skopeo
// and podman load), replacing earlier ones. index.json names the index
// Repository:Tag.
func Write(b *Built, dir string) error {
	lay := filepath.Join(dir, LayoutDir)
	if err := os.RemoveAll(lay); err != nil {
		return err
	}
	p, err := layout.Write(lay, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(b.Index, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": b.Ref(),
	})); err != nil {
		return fmt.Errorf("write %s: %w", lay, err)
	}
	return archive(lay, filepath.Join(dir, ArchiveFile), b.Created)
}

// archive tars the directory dir into file: paths relative to dir, sorted,
// every time modTime, owned by 0:0.
func archive(dir, file string, modTime time.Time) (err error) {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error { // lexical order
		if err != nil || path == dir {
			return err
		}
		name, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(name), Mode: 0o644, ModTime: modTime, Format: tar.FormatUSTAR}
		if d.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
			return tw.WriteHeader(h)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h.Typeflag, h.Size = tar.TypeReg, info.Size()
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	return tw.Close()
}
