package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// packaged writes a chart archive as helm package does: its files stamped with the given time.
func packaged(t *testing.T, path string, stamped time.Time) {
	t.Helper()
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	zw.Header.Comment = "Helm"
	tw := tar.NewWriter(zw)
	for _, f := range []struct{ name, body string }{{"landlord/Chart.yaml", "name: landlord\n"}, {"landlord/values.yaml", "replicas: 1\n"}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), ModTime: stamped}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestANormalizedChartDoesNotDependOnWhenItWasPackaged(t *testing.T) {
	dir := t.TempDir()
	release := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a, b := filepath.Join(dir, "a.tgz"), filepath.Join(dir, "b.tgz")
	packaged(t, a, time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC))
	packaged(t, b, time.Date(2026, 5, 1, 10, 0, 7, 0, time.UTC))
	for _, path := range []string{a, b} {
		if err := NormalizeChart(path, release); err != nil {
			t.Fatal(err)
		}
	}
	dataA, _ := os.ReadFile(a)
	dataB, _ := os.ReadFile(b)
	t.Run("two packagings of one chart have the same bytes", func(t *testing.T) {
		if !bytes.Equal(dataA, dataB) {
			t.Error("the normalized archives differ")
		}
	})
	t.Run("every file keeps its content and takes the release's time, and the gzip header stays Helm's", func(t *testing.T) {
		zr, err := gzip.NewReader(bytes.NewReader(dataA))
		if err != nil {
			t.Fatal(err)
		}
		if zr.Comment != "Helm" {
			t.Errorf("gzip comment %q, want Helm's", zr.Comment)
		}
		tr := tar.NewReader(zr)
		files := map[string]string{}
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			if !h.ModTime.Equal(release) {
				t.Errorf("%s is stamped %v, want %v", h.Name, h.ModTime, release)
			}
			body, _ := io.ReadAll(tr)
			files[h.Name] = string(body)
		}
		if files["landlord/Chart.yaml"] != "name: landlord\n" || files["landlord/values.yaml"] != "replicas: 1\n" {
			t.Errorf("files %v", files)
		}
	})
}
