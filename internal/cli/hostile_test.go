package cli

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHostileUserFiles runs commands on files a user (or an attacker who
// wrote their publish file) names: devices, FIFOs, files over the size
// bound, values of megabytes. Each must end at once with exit 2, an error
// naming the bound, and a short stderr.
// hangAfter is how long a hostile case may run before the test calls it a
// hang. It detects hangs, not slowness: the race detector on a loaded
// two-core CI machine makes an honest refusal take over 10 s.
const hangAfter = time.Minute

func TestHostileUserFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	must(t, syscall.Mkfifo(fifo, 0o644))
	big := filepath.Join(dir, "big.yaml")
	must(t, os.WriteFile(big, nil, 0o644))
	must(t, os.Truncate(big, 5<<20)) // sparse
	longValue := filepath.Join(dir, "long.json")
	must(t, os.WriteFile(longValue, []byte(`{"cuda": "`+strings.Repeat("9", 3<<20)+`"}`), 0o644))
	longYAML := filepath.Join(dir, "long.yaml")
	must(t, os.WriteFile(longYAML, []byte("repository: r.example.com/t\ntag: \""+strings.Repeat("x", 3<<20)+"\"\nmatrix:\n  torch: [\"2.7\"]\n"), 0o644))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"--stack /dev/zero", []string{"matrix", "check", "--stack", "/dev/zero", "--gpu", "h100"}, "not a regular file (a character device)"},
		{"--stack FIFO", []string{"matrix", "check", "--stack", fifo, "--gpu", "h100"}, "not a regular file (a FIFO)"},
		{"--stack 5 MiB", []string{"matrix", "check", "--stack", big, "--gpu", "h100"}, "over the limit of 4 MiB"},
		{"--stack with a 3 MiB value", []string{"matrix", "check", "--stack", longValue, "--gpu", "h100"}, "gpuimg: "},
		{"--matrix-file /dev/zero", []string{"matrix", "resolve", "--matrix-file", "/dev/zero", "--torch", "2.7"}, "not a regular file (a character device)"},
		{"--matrix-file FIFO", []string{"matrix", "resolve", "--matrix-file", fifo, "--torch", "2.7"}, "not a regular file (a FIFO)"},
		{"--matrix-file 5 MiB", []string{"matrix", "resolve", "--matrix-file", big, "--torch", "2.7"}, "over the limit of 4 MiB"},
		{"publish -f /dev/zero", []string{"publish", "-f", "/dev/zero", "--dry-run"}, "not a regular file (a character device)"},
		{"publish -f FIFO", []string{"publish", "-f", fifo, "--dry-run"}, "not a regular file (a FIFO)"},
		{"publish -f 5 MiB", []string{"publish", "-f", big, "--dry-run"}, "over the limit of 4 MiB"},
		{"publish -f with a 3 MiB tag", []string{"publish", "-f", longYAML, "--dry-run"}, "gpuimg: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type result struct {
				errOut string
				code   int
			}
			done := make(chan result, 1)
			go func() {
				_, errOut, code := run(t, tc.args...)
				done <- result{errOut, code}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(hangAfter):
				t.Fatalf("still running after %s", hangAfter)
			}
			if r.code != ExitInvalid || !strings.Contains(r.errOut, tc.want) {
				t.Errorf("exit %d, stderr %.300q; want exit 2 and %q", r.code, r.errOut, tc.want)
			}
			if len(r.errOut) > 4096 {
				t.Errorf("stderr of %d bytes echoes the input: %.300q", len(r.errOut), r.errOut)
			}
		})
	}
}

// TestHostileLayouts runs validate and images export on oci: layouts
// whose index.json is /dev/zero or a FIFO: exit 2 at once, naming the
// bound, and nothing written where the export would go.
func TestHostileLayouts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(string) error
		want  string
	}{
		{"index.json is /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }, "not a regular file (a character device)"},
		{"index.json is a FIFO", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "not a regular file (a FIFO)"},
	} {
		dir := t.TempDir()
		must(t, os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644))
		must(t, tc.spoil(filepath.Join(dir, "index.json")))
		out := t.TempDir()
		for _, args := range [][]string{
			{"validate", "oci:" + dir},
			{"images", "export", "oci:" + dir, filepath.Join(out, "image.tar")},
			{"sbom", "oci:" + dir},
		} {
			t.Run(tc.name+"/"+args[0], func(t *testing.T) {
				type result struct {
					errOut string
					code   int
				}
				done := make(chan result, 1)
				go func() {
					_, errOut, code := run(t, args...)
					done <- result{errOut, code}
				}()
				var r result
				select {
				case r = <-done:
				case <-time.After(10 * time.Second):
					t.Fatal("still running after 10 s")
				}
				if r.code != ExitInvalid || !strings.Contains(r.errOut, tc.want) {
					t.Errorf("exit %d, stderr %.300q; want exit 2 and %q", r.code, r.errOut, tc.want)
				}
				if left, _ := os.ReadDir(out); len(left) != 0 {
					t.Errorf("wrote %d files", len(left))
				}
			})
		}
	}
}

// TestHostileDockerArchive runs validate, images export and sbom on a
// docker-archive whose layer.tar declares 64 GiB stored as a hole (a few
// KiB on disk): exit 2 at once, naming the bomb bound, before
// go-containerregistry would gzip the layer whole; nothing written.
func TestHostileDockerArchive(t *testing.T) {
	file := filepath.Join(t.TempDir(), "sparse.tar")
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	put := func(name string, data []byte) {
		must(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}))
		_, err := tw.Write(data)
		must(t, err)
	}
	put("manifest.json", []byte(`[{"Config":"config.json","RepoTags":["x:y"],"Layers":["layer.tar"]}]`))
	put("config.json", []byte(`{"rootfs":{"type":"layers","diff_ids":["sha256:0000000000000000000000000000000000000000000000000000000000000000"]}}`))
	must(t, tw.WriteHeader(&tar.Header{Name: "layer.tar", Mode: 0o644, Size: 64 << 30, Typeflag: tar.TypeReg}))
	// tar.Writer has written the header: the member is the hole below.
	must(t, os.WriteFile(file, b.Bytes(), 0o644))
	must(t, os.Truncate(file, int64(b.Len())+64<<30+1024)) // the member's holes, then the end blocks
	out := t.TempDir()
	for _, args := range [][]string{
		{"validate", "docker-archive:" + file},
		{"images", "export", "docker-archive:" + file, filepath.Join(out, "image.tar")},
		{"sbom", "docker-archive:" + file},
	} {
		t.Run(args[0], func(t *testing.T) {
			type result struct {
				errOut string
				code   int
			}
			done := make(chan result, 1)
			go func() {
				_, errOut, code := run(t, args...)
				done <- result{errOut, code}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(hangAfter):
				t.Fatalf("still running after %s", hangAfter)
			}
			if want := "the decompression-bomb bound of every layer"; r.code != ExitInvalid || !strings.Contains(r.errOut, want) {
				t.Errorf("exit %d, stderr %.400q; want exit 2 and %q", r.code, r.errOut, want)
			}
			if left, _ := os.ReadDir(out); len(left) != 0 {
				t.Errorf("wrote %d files", len(left))
			}
		})
	}
}
