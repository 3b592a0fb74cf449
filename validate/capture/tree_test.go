package capture

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/matrix"
)

// treeRecords are the install records every case's root holds: the only
// files, with the venv's, whose content the capture may read.
var treeRecords = map[string]string{
	"etc/os-release":      "ID=debian\nVERSION_ID=\"12\"\n",
	"var/lib/dpkg/status": "Package: base-files\nStatus: install ok installed\nPriority: required\nVersion: 12.4\n",
	"opt/venv/pyvenv.cfg": "version = 3.11.2\n",
	"opt/venv/lib/python3.11/site-packages/einops-0.8.0.dist-info/METADATA": "Name: einops\nVersion: 0.8.0\n",
	"usr/local/lib/libhandmade.so.1":                                        "\x7fELF hand-copied",
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTreeReadsOnlyWhatCaptureNeeds captures roots that hold, beside a
// small installed environment, what makes a whole machine slow: another
// file system mounted inside, container runtimes' storage, caches and a
// huge data directory. The capture must leave out the first three, read
// the data directory by name only, and find the same environment.
func TestTreeReadsOnlyWhatCaptureNeeds(t *testing.T) {
	db, err := matrix.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	// A dist-info and a CUDA library in each left-out tree: read, they
	// would show up as a distribution or among the opened files.
	poison := func(dir string) map[string]string {
		return map[string]string{
			dir + "/lib/python3.11/site-packages/poison-1.0.dist-info/METADATA": "Name: poison\nVersion: 1.0\n",
			dir + "/libcudart.so.12": "\x7fELF",
		}
	}
	cases := []struct {
		name    string
		files   map[string]string
		otherFS []string // directories that stand for mounts of another file system
		skipped string   // a line TreeStats.Skipped must hold
		unowned int      // files Facts.Unowned lists beside the hand-copied library
	}{
		{name: "bind mount", files: poison("srv/nfs"), otherFS: []string{"srv/nfs"}, skipped: "/srv/nfs (another file system)"},
		{name: "other device", files: poison("opt/scratch"), otherFS: []string{"opt/scratch"}, skipped: "/opt/scratch (another file system)"},
		{name: "docker storage", files: poison("var/lib/docker/overlay2/abc/diff/usr"), skipped: "/var/lib/docker (container storage)"},
		{name: "containerd storage", files: poison("var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/1/fs/usr"), skipped: "/var/lib/containerd (container storage)"},
		{name: "rootless podman", files: poison("home/u/.local/share/containers/storage/overlay/x/diff/usr"), skipped: "/home/u/.local/share/containers (cache)"},
		{name: "pip cache", files: poison("root/.cache/pip/wheels"), skipped: "/root/.cache (cache)"},
		{name: "go module cache", files: poison("root/go/pkg/mod/example.com/m"), skipped: "/root/go/pkg/mod (cache)"},
		{name: "huge data dir", files: dataDir("srv/data", 3000), unowned: 3002},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, treeRecords)
			writeFiles(t, root, tc.files)
			if tc.name == "huge data dir" {
				// A 64 GiB sparse checkpoint and a 64 GiB file with no
				// suffix: read, either would take minutes.
				for _, name := range []string{"srv/data/model.safetensors", "srv/data/blob"} {
					if err := os.Truncate(filepath.Join(root, name), 64<<30); err != nil {
						t.Fatal(err)
					}
				}
			}
			other := map[string]bool{}
			for _, d := range tc.otherFS {
				other[filepath.Join(root, d)] = true
			}
			var stats TreeStats
			img, err := DirImage(t.Context(), root, nil, TreeOptions{Stats: &stats, otherFS: func(abs string, _ fs.FileInfo) bool { return other[abs] }})
			if err != nil {
				t.Fatal(err)
			}
			f, _, err := Collect(t.Context(), img, CollectOptions{Name: "dir:" + root, DB: db})
			if err != nil {
				t.Fatal(err)
			}
			if stats.Passes != 3 {
				t.Errorf("the tree was read %d times, want 3 (hash, inventory, install records)", stats.Passes)
			}
			opened := slices.Sorted(slices.Values(stats.Opened))
			want := []string{"etc/os-release", "opt/venv/lib/python3.11/site-packages/einops-0.8.0.dist-info/METADATA", "opt/venv/pyvenv.cfg", "var/lib/dpkg/status"}
			if !slices.Equal(opened, want) {
				t.Errorf("files opened = %q, want only the install records %q", opened, want)
			}
			if stats.Bytes > 1<<10 {
				t.Errorf("a pass read %d bytes, want the install records' few hundred", stats.Bytes)
			}
			if tc.skipped != "" && !slices.Contains(stats.Skipped, tc.skipped) {
				t.Errorf("left out %q, want %q among them", stats.Skipped, tc.skipped)
			}
			if tc.skipped != "" && stats.Files > 40 {
				t.Errorf("a pass wrote %d entries, want the small environment's (the left-out tree walked?)", stats.Files)
			}
			var names []string
			for _, d := range f.Dists {
				names = append(names, d.Name)
			}
			if !slices.Equal(names, []string{"einops"}) {
				t.Errorf("distributions = %q, want [einops] (a left-out tree read?)", names)
			}
			if len(f.Unowned) != tc.unowned+1 || !slices.Contains(f.Unowned, "/usr/local/lib/libhandmade.so.1") {
				t.Errorf("%d unowned files (first %q), want %d and the hand-copied library", len(f.Unowned), f.Unowned[:min(3, len(f.Unowned))], tc.unowned+1)
			}
		})
	}
}

// dataDir is n small files of a data set under dir, named as by a
// sharding tool, plus the two large files the test makes sparse.
func dataDir(dir string, n int) map[string]string {
	files := map[string]string{dir + "/model.safetensors": "", dir + "/blob": ""}
	for i := range n {
		files[fmt.Sprintf("%s/shards/%03d/part-%05d.json", dir, i/100, i)] = `{"text": "a sample"}`
	}
	return files
}

// TestTreeBounds: a tree past a bound fails with a message that names
// the bound and the way out, rather than reading on.
func TestTreeBounds(t *testing.T) {
	cases := []struct {
		name string
		opt  TreeOptions
		want string
	}{
		{"files", TreeOptions{MaxFiles: 10}, "holds more than 10 files"},
		{"bytes", TreeOptions{MaxBytes: 16}, "the files a capture reads pass 16 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, treeRecords)
			writeFiles(t, root, dataDir("srv/data", 50))
			// The image's config carries the layer's diff ID: the first
			// pass runs, and fails, as the image is made.
			_, err := DirImage(t.Context(), root, nil, tc.opt)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "docs/faults.md") {
				t.Fatalf("err = %v, want %q naming docs/faults.md", err, tc.want)
			}
		})
	}
}

// TestOtherFSDefault: /proc is another file system than /, /usr is not.
func TestOtherFSDefault(t *testing.T) {
	other := otherFS("/")
	for dir, want := range map[string]bool{"/proc": true, "/usr": false} {
		st, err := os.Lstat(dir)
		if err != nil {
			t.Skip(err)
		}
		if got := other(dir, st); got != want {
			t.Errorf("otherFS(%s) = %v, want %v", dir, got, want)
		}
	}
	if got := unescapeMount(`/mnt/my\040disk`); got != "/mnt/my disk" {
		t.Errorf("unescapeMount = %q", got)
	}
}

// TestTreeLiveFiles: files created and removed between the passes, as
// on a live machine, leave the capture as the first pass saw it, where
// walking the tree anew would fail the diff ID check.
func TestTreeLiveFiles(t *testing.T) {
	db, err := matrix.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	writeFiles(t, root, treeRecords)
	writeFiles(t, root, map[string]string{"srv/job/old.txt": "going", "opt/tool/run.sh": "#!/bin/sh\n"})
	img, err := DirImage(t.Context(), root, nil)
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, root, map[string]string{"srv/job/new.txt": "came", "opt/venv/lib/python3.11/site-packages/late-1.0.dist-info/METADATA": "Name: late\nVersion: 1.0\n"})
	if err := os.Remove(filepath.Join(root, "srv/job/old.txt")); err != nil {
		t.Fatal(err)
	}
	f, _, err := Collect(t.Context(), img, CollectOptions{Name: "dir:" + root, DB: db})
	if err != nil {
		t.Fatalf("capture of a tree that changed between passes: %v", err)
	}
	if want := []string{"/opt/tool/run.sh", "/srv/job/old.txt", "/usr/local/lib/libhandmade.so.1"}; !slices.Equal(f.Unowned, want) {
		t.Errorf("unowned = %q, want the first pass's %q", f.Unowned, want)
	}
	if len(f.Dists) != 1 || f.Dists[0].Name != "einops" {
		t.Errorf("distributions = %+v, want einops only", f.Dists)
	}
}
