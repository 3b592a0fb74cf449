package main

import (
	"archive/tar"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestUnpacks(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 22, 41, 0, 0, time.UTC)
	log := `time="2026-11-30T22:40:59.000000000Z" level=debug msg="diff applied" d=9s digest="sha256:old" media=application/vnd.oci.image.layer.v1.tar+gzip size=1
time="2026-11-30T22:41:02.500000000Z" level=debug msg="diff applied" d=1.25s digest="sha256:aa" media=application/vnd.oci.image.layer.v1.tar+gzip size=12345
time="2026-11-30T22:41:03.000000000Z" level=debug msg="layer unpacked" duration=1s
time="2026-11-30T22:41:04Z" level=debug msg="diff applied" d=250ms digest="sha256:bb" media=application/vnd.oci.image.layer.v1.tar+zstd size=7
`
	p := filepath.Join(t.TempDir(), "containerd.log")
	if err := os.WriteFile(p, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	off := int64(len(`time="2026-11-30T22:40:59.000000000Z" level=debug msg="diff applied" d=9s digest="sha256:old" media=application/vnd.oci.image.layer.v1.tar+gzip size=1` + "\n"))
	got := unpacks(p, off, t0)
	want := []unpack{
		{Digest: "sha256:aa", Size: 12345, Done: 2500 * time.Millisecond, Took: 1250 * time.Millisecond},
		{Digest: "sha256:bb", Size: 7, Done: 4 * time.Second, Took: 250 * time.Millisecond},
	}
	if !slices.Equal(got, want) {
		t.Errorf("unpacks = %+v, want %+v", got, want)
	}
}

func TestTiming(t *testing.T) {
	r := result{
		Pull: 5 * time.Second,
		Fetches: []Fetch{
			{Path: "/v2/", Bytes: 100, LastByte: 100 * time.Millisecond},
			{Path: "/v2/a/blobs/sha256:1", Bytes: 1e6, LastByte: 2 * time.Second},
			{Path: "/v2/a/blobs/sha256:2", Bytes: 1e6, LastByte: 4 * time.Second},
			{Path: "/v2/a/manifests/x", Bytes: 1e4, LastByte: 50 * time.Millisecond},
		},
		Unpacks: []unpack{{Took: time.Second}, {Took: 2 * time.Second}},
	}
	got := r.timing(1e6)
	want := timing{Blobs: 2, LastByte: 4 * time.Second, Busy: 0.5, UnpackSum: 3 * time.Second, AfterLast: time.Second}
	if got != want {
		t.Errorf("timing = %+v, want %+v", got, want)
	}
}

func TestStripRootfs(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "in.tar")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	files := []struct {
		name string
		size int
	}{
		{"./usr/share/doc/", 0}, {"./usr/share/doc/bash/README", 10},
		{"./usr/lib/python3.13/test/", 0}, {"./usr/lib/python3.13/test/t.py", 20},
		{"./usr/lib/python3.13/os.py", 30}, {"./usr/share/docs-keep", 5},
	}
	for _, x := range files {
		h := &tar.Header{Name: x.name, Mode: 0o644, Size: int64(x.size), Typeflag: tar.TypeReg}
		if x.size == 0 {
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(make([]byte, x.size)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	dst := filepath.Join(dir, "out.tar")
	kept, dropped, err := stripRootfs(src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if kept != 35 || dropped != 30 {
		t.Errorf("kept %d, dropped %d bytes; want 35 and 30", kept, dropped)
	}
	in, err := os.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var names []string
	tr := tar.NewReader(in)
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		names = append(names, h.Name)
	}
	want := []string{"./usr/share/doc/", "./usr/lib/python3.13/test/", "./usr/lib/python3.13/os.py", "./usr/share/docs-keep"}
	if !slices.Equal(names, want) {
		t.Errorf("kept %q, want %q", names, want)
	}
}

func TestMedian(t *testing.T) {
	s := time.Second
	tests := []struct {
		name  string
		tooks []time.Duration
		want  time.Duration
	}{
		{"one run", []time.Duration{5 * s}, 5 * s},
		{"three runs, the slow fetch order last", []time.Duration{30 * s, 26 * s, 27 * s}, 27 * s},
		{"two runs: the slower", []time.Duration{3 * s, 4 * s}, 4 * s},
	}
	for _, tt := range tests {
		var runs []result
		for i, d := range tt.tooks {
			runs = append(runs, result{Kind: "gpuimg", Took: d, Pulled: int64(i)})
		}
		m := median(runs)
		if m.Took != tt.want || !slices.Equal(m.Runs, tt.tooks) || runs[m.Pulled].Took != m.Took {
			t.Errorf("%s: median = %v (runs %v), want %v with every run's time in order", tt.name, m.Took, m.Runs, tt.want)
		}
	}
	if m := median(nil); m.Took != 0 {
		t.Errorf("median of nothing = %v", m)
	}
}

func TestRatioText(t *testing.T) {
	r := report{Results: []result{
		{Link: links[0].Name, Scenario: "update", Kind: "naive", Took: 40 * time.Second},
		{Link: links[0].Name, Scenario: "update", Kind: "gpuimg", Took: 2 * time.Second},
		{Link: links[1].Name, Scenario: "cold", Kind: "naive", Took: 10 * time.Second},
		{Link: links[1].Name, Scenario: "cold", Kind: "gpuimg", Took: 5 * time.Second},
	}}
	for sc, want := range map[string]string{"update": "0.05", "cold": "-", "switch": "-"} {
		if got := r.ratioText(sc); got != want {
			t.Errorf("ratioText(%s) = %q, want %q (only the slow link counts)", sc, got, want)
		}
	}
}
