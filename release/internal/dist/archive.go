package dist

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// SumsFile is the checksum file of a release, in sha256sum's format.
const SumsFile = "SHA256SUMS"

// archiveFile is one file of an archive.
type archiveFile struct {
	name, path string
	mode       fs.FileMode
}

// writeArchive writes files under the folder dir into a .zip or .tar.gz at
// out, every entry owned by root and dated date, so that the archive
// depends on the files alone.
func writeArchive(out, dir string, files []archiveFile, date time.Time) (err error) {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	if strings.HasSuffix(out, ".zip") {
		return writeZip(f, dir, files, date)
	}
	return writeTarGz(f, dir, files, date)
}

func writeTarGz(w io.Writer, dir string, files []archiveFile, date time.Time) error {
	gz, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755, ModTime: date}); err != nil {
		return err
	}
	for _, file := range files {
		data, err := os.ReadFile(file.path)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: path.Join(dir, file.name), Mode: int64(file.mode), Size: int64(len(data)), ModTime: date}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func writeZip(w io.Writer, dir string, files []archiveFile, date time.Time) error {
	zw := zip.NewWriter(w)
	for _, file := range files {
		data, err := os.ReadFile(file.path)
		if err != nil {
			return err
		}
		hdr := &zip.FileHeader{Name: path.Join(dir, file.name), Method: zip.Deflate, Modified: date}
		hdr.SetMode(file.mode)
		fw, err := zw.CreateHeader(hdr)
		if err != nil {
			return err
		}
		if _, err := fw.Write(data); err != nil {
			return err
		}
	}
	return zw.Close()
}

// WriteSums writes SumsFile in dir: the SHA-256 of every regular file in
// dir (the checksum file aside), in the order of their names.
func WriteSums(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var lines []string
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == SumsFile {
			continue
		}
		sum, err := fileSHA256(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		lines = append(lines, fmt.Sprintf("%s  %s\n", sum, e.Name()))
	}
	return os.WriteFile(filepath.Join(dir, SumsFile), []byte(strings.Join(lines, "")), 0o644)
}

func fileSHA256(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
