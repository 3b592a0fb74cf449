package matrix

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTargetRows(t *testing.T) {
	const head = "sources: [{id: ours, url: https://wiki.example.com/cluster}]\ntargets:\n"
	tests := []struct {
		name, rows, err string
	}{
		{"team fleet", "  - {name: onprem/a, driver: 550.127.05, gpus: [h100, l40s], platforms: [linux/amd64], media_types: [docker, oci], index: true, compressions: [gzip, zstd], max_size: 9.5GB, size_of: uncompressed, registry: any, runtime: {port: 8080, user: root}, source: ours}\n", ""},
		// A branch is not a driver: it was read as 535.0.0 (issue 43, item 5).
		{"driver branch", "  - {name: onprem/b, driver: 535, source: ours}\n", `driver "535" is a branch, not a driver version: give the full version nvidia-smi prints (nvidia-smi --query-gpu=driver_version`},
		{"driver of two numbers", "  - {name: onprem/b, driver: 390.157, source: ours}\n", ""},
		{"unknown GPU", "  - {name: onprem/c, gpus: [h1000], source: ours}\n", `GPU "h1000" is not a row`},
		{"bad media type", "  - {name: onprem/c, media_types: [oci1], source: ours}\n", `media type "oci1"`},
		{"bad compression", "  - {name: onprem/c, compressions: [lz4], source: ours}\n", `compression "lz4"`},
		{"size without size_of", "  - {name: onprem/c, max_size: 10GB, source: ours}\n", "max_size needs size_of"},
		{"bad size", "  - {name: onprem/c, max_size: ten, size_of: compressed, source: ours}\n", `size "ten"`},
		{"bad platform", "  - {name: onprem/c, platforms: [amd64], source: ours}\n", `platform "amd64"`},
		{"bad unconfirmed key", "  - {name: onprem/c, unconfirmed: [colour], source: ours}\n", `unconfirmed "colour"`},
		{"container toolkit", "  - {name: onprem/d, container_toolkit: {version: 1.17.3, source: ours, retrieved: 2026-12-02}, unconfirmed: [container_toolkit], source: ours}\n", ""},
		{"container toolkit without version", "  - {name: onprem/c, container_toolkit: {source: ours, retrieved: 2026-12-02}, source: ours}\n", "container_toolkit needs version"},
		{"container toolkit of an unknown source", "  - {name: onprem/c, container_toolkit: {version: 1.17.3, source: theirs, retrieved: 2026-12-02}, source: ours}\n", `container_toolkit names source "theirs"`},
		{"container toolkit without retrieved", "  - {name: onprem/c, container_toolkit: {version: 1.17.3, source: ours}, source: ours}\n", "container_toolkit retrieved"},
		{"no source", "  - {name: onprem/c}\n", "has no source"},
		{"unknown key", "  - {name: onprem/c, drivers: 535, source: ours}\n", "drivers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "m.yaml")
			if err := os.WriteFile(p, []byte(head+tt.rows), 0o644); err != nil {
				t.Fatal(err)
			}
			db, err := Load(p)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Load: %v, want an error containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			name, _, _ := strings.Cut(strings.TrimPrefix(tt.rows, "  - {name: "), ",")
			if _, err := db.Target(strings.ToUpper(name)); err != nil {
				t.Fatalf("Target(%s): %v", name, err)
			}
		})
	}
}

func TestTargetSize(t *testing.T) {
	for in, want := range map[string]Size{"10GB": 10e9, "9.5 GB": 9.5e9, "500MB": 500e6, "2GiB": 2 << 30, "1234": 1234} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}

func TestUnknownTargetSuggests(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.yaml")
	rows := "sources: [{id: ours, url: https://x}]\ntargets:\n  - {name: onprem/alpha, source: ours}\n  - {name: onprem/beta, source: ours}\n  - {name: zzz/far, source: ours}\n"
	if err := os.WriteFile(p, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Target("onprem/alpah")
	if !errors.Is(err, ErrUnknownTarget) || !strings.Contains(err.Error(), "onprem/alpha") || strings.Contains(err.Error(), "zzz/far") {
		t.Fatalf("Target(onprem/alpah) = %v, want an unknown-target error suggesting onprem/alpha only", err)
	}
}
