package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"time"
)

// NormalizeChart rewrites a chart archive that helm package wrote with every file's time set to
// mtime: helm stamps each with the time of packaging, so two packagings of one chart differ. The
// gzip header Helm writes (its comment and extra field) is kept; the files, their order and
// their modes are unchanged.
func NormalizeChart(path string, mtime time.Time) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return err
	}
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	zw.Header = gzip.Header{Comment: zr.Comment, Extra: zr.Extra, Name: zr.Name, OS: zr.OS}
	tr, tw := tar.NewReader(zr), tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return err
		}
		h.ModTime, h.AccessTime, h.ChangeTime = mtime, time.Time{}, time.Time{}
		h.Format = tar.FormatUSTAR
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, out.Bytes(), 0o644)
}
