package testenv

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestWithSourcesList(t *testing.T) {
	const sources = "deb [trusted=yes] http://127.0.0.1:1/ ./\n"
	tests := []struct {
		name string
		in   []tar.Header // regular files hold their name as content
		want map[string]string
	}{
		{"replaced, sources.list.d emptied",
			[]tar.Header{
				{Name: "./bin/sh", Typeflag: tar.TypeReg},
				{Name: "./etc/apt/sources.list", Typeflag: tar.TypeReg},
				{Name: "./etc/apt/sources.list.d/", Typeflag: tar.TypeDir},
				{Name: "./etc/apt/sources.list.d/debian.sources", Typeflag: tar.TypeReg},
				{Name: "./etc/apt/sources.list.d/old.list", Typeflag: tar.TypeSymlink, Linkname: "/x"},
			},
			map[string]string{"./bin/sh": "./bin/sh", "./etc/apt/sources.list": sources, "./etc/apt/sources.list.d/": ""}},
		{"a link replaced by a file",
			[]tar.Header{{Name: "./etc/apt/sources.list", Typeflag: tar.TypeSymlink, Linkname: "/elsewhere"}},
			map[string]string{"./etc/apt/sources.list": sources}},
		{"added where there is none",
			[]tar.Header{{Name: "./etc/hostname", Typeflag: tar.TypeReg}},
			map[string]string{"./etc/hostname": "./etc/hostname", "./etc/apt/sources.list": sources}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in bytes.Buffer
			tw := tar.NewWriter(&in)
			for _, h := range tt.in {
				h.Mode = 0o644
				body := ""
				if h.Typeflag == tar.TypeReg {
					body = h.Name
					h.Size = int64(len(body))
				}
				if err := tw.WriteHeader(&h); err != nil {
					t.Fatal(err)
				}
				if _, err := io.WriteString(tw, body); err != nil {
					t.Fatal(err)
				}
			}
			if err := tw.Close(); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := withSourcesList(&out, &in, sources); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			tr := tar.NewReader(&out)
			for {
				h, err := tr.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(tr)
				got[h.Name] = string(b)
				if h.Name == "./etc/apt/sources.list" && h.Typeflag != tar.TypeReg {
					t.Errorf("sources.list is of type %c, want a regular file", h.Typeflag)
				}
			}
			if len(got) != len(tt.want) {
				t.Errorf("entries %v, want %v", got, tt.want)
			}
			for n, w := range tt.want {
				if got[n] != w {
					t.Errorf("%s = %q, want %q", n, got[n], w)
				}
			}
		})
	}
}

// TestWriteAptIndex builds a .deb with dpkg-deb, indexes it, and serves
// it: the Packages paragraph carries the control fields and the file's
// name, size and sums, as apt reads them.
func TestWriteAptIndex(t *testing.T) {
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("needs dpkg-deb")
	}
	src, repo := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "DEBIAN"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctl := "Package: gpuimg-fixture\nVersion: 1.0-1\nArchitecture: amd64\nMaintainer: gpuimg <gpuimg@example.invalid>\nDescription: a test package\n"
	if err := os.WriteFile(filepath.Join(src, "DEBIAN", "control"), []byte(ctl), 0o644); err != nil {
		t.Fatal(err)
	}
	deb := filepath.Join(repo, "gpuimg-fixture_1.0-1_amd64.deb")
	if out, err := exec.CommandContext(t.Context(), "dpkg-deb", "--build", "--root-owner-group", src, deb).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb --build: %v\n%s", err, out)
	}
	if err := writeAptIndex(t.Context(), repo); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(deb)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ServeAptRepo(repo)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	get := func(p string) string {
		resp, err := http.Get(r.URL + p) //nolint:noctx // loopback
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	pk := get("Packages")
	for _, want := range []string{"Package: gpuimg-fixture\n", "Version: 1.0-1\n", "Filename: ./gpuimg-fixture_1.0-1_amd64.deb\n", "Size: " + strconv.FormatInt(fi.Size(), 10) + "\n", "MD5sum: ", "SHA256: "} {
		if !strings.Contains(pk, want) {
			t.Errorf("Packages lacks %q:\n%s", want, pk)
		}
	}
	if !strings.HasSuffix(pk, "\n\n") {
		t.Errorf("Packages paragraph not ended by a blank line: %q", pk)
	}
	if rel := get("Release"); !strings.Contains(rel, " Packages\n") || !strings.Contains(rel, "SHA256:\n") {
		t.Errorf("Release does not list Packages:\n%s", rel)
	}
	if got := r.SourcesList(); !strings.Contains(got, "deb [trusted=yes] "+r.URL+" ./\n") {
		t.Errorf("sources.list %q", got)
	}
}
