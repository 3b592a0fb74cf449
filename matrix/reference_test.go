package matrix

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReferences: the built-in references name real GPU rows and carry
// their software; bad rows in a matrix file are errors naming the line.
func TestReferences(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	got := db.ReferencesFor("A100-SXM4-80GB")
	var train, share bool
	for _, r := range got {
		train = train || (r.Figure == "resnet50_images_per_s" && r.Precision == "amp-fp16" && r.Batch == 256 && r.Value == 2470)
		share = share || (r.Figure == "gemm_bf16_share" && r.Value == 0.869 && r.Torch == "2.6.0+cu126")
	}
	if !train || !share {
		t.Errorf("A100-SXM4-80GB references %+v", got)
	}
	if r := db.ReferencesFor("L4"); len(r) != 0 {
		t.Errorf("L4 has references %+v, but no source was found for it", r)
	}
	head := "sources:\n  - {id: s, url: https://example.org}\nreferences:\n"
	for _, tt := range []struct{ name, row, want string }{
		{"unknown GPU", "  - {gpu: H900, figure: gemm_bf16_share, value: 0.8, precision: bf16, software: x, source: s}\n", `names GPU "H900"`},
		{"unknown figure", "  - {gpu: H100-SXM, figure: llama_tokens, value: 1, precision: bf16, software: x, source: s}\n", `figure "llama_tokens"`},
		{"share above 1", "  - {gpu: H100-SXM, figure: gemm_bf16_share, value: 80, precision: bf16, software: x, source: s}\n", "a share at most 1"},
		{"no software", "  - {gpu: H100-SXM, figure: gemm_bf16_share, value: 0.8, precision: bf16, source: s}\n", "needs precision and software"},
		{"no source", "  - {gpu: H100-SXM, figure: gemm_bf16_share, value: 0.8, precision: bf16, software: x}\n", "has no source"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "m.yaml")
			if err := os.WriteFile(p, []byte(head+tt.row), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(p)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "m.yaml:4") {
				t.Errorf("err = %v, want %q at m.yaml:4", err, tt.want)
			}
		})
	}
	// A later file's row with the same key replaces the built-in one.
	p := filepath.Join(t.TempDir(), "m.yaml")
	row := "  - {gpu: H100-SXM, figure: gemm_bf16_share, value: 0.75, precision: bf16, software: ours, source: s}\n"
	if err := os.WriteFile(p, []byte(head+row), 0o644); err != nil {
		t.Fatal(err)
	}
	db, err = Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if r := db.ReferencesFor("h100-sxm"); len(r) != 1 || r[0].Value != 0.75 {
		t.Errorf("replaced references %+v", r)
	}
}

// TestLinks: the built-in link rows give NVLink's rate per link by
// generation and architecture, PCIe's per lane by generation; a
// generation without a row is not found, and bad rows are errors naming
// the line.
func TestLinks(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		version int
		arch    string
		want    float64
		ok      bool
	}{
		{4, "sm_90", 25, true},
		{3, "sm_80", 25, true},
		{3, "sm_86", 14.0625, true}, // GA102's narrower links
		{5, "sm_100", 50, true},
		{2, "sm_70", 25, true},
		{2, "sm_75", 25, true}, // Turing's NVLink 2.2
		{1, "sm_60", 20, true}, // Pascal's NVLink 1.0
		{1, "sm_70", 0, false},
		{2, "sm_89", 0, false}, // Ada has no NVLink
		{6, "sm_100", 0, false},
		{0, "sm_90", 25, true}, // no active link to ask: the architecture's row
		{0, "sm_60", 20, true},
		{0, "sm_89", 0, false},
	} {
		l, ok := db.NVLink(tt.version, tt.arch)
		if ok != tt.ok || l.GBsPerLink != tt.want || (ok && l.Source == "") {
			t.Errorf("NVLink(%d, %s) = %+v %v, want %g %v", tt.version, tt.arch, l, ok, tt.want, tt.ok)
		}
	}
	for gen, want := range map[int]float64{1: 0.25, 2: 0.5, 3: 0.9846, 4: 1.9692, 5: 3.9385} {
		if got, ok := db.PCIeLaneGBs(gen); !ok || got < want-0.0001 || got > want+0.0001 {
			t.Errorf("PCIeLaneGBs(%d) = %.4f %v, want %.4f", gen, got, ok, want)
		}
	}
	if _, ok := db.PCIeLaneGBs(6); ok {
		t.Error("PCIe gen 6 has a lane rate, but no row records one")
	}
	head := "sources:\n  - {id: s, url: https://example.org}\nlinks:\n"
	for _, tt := range []struct{ name, row, want string }{
		{"no rate", "  - {link: nvlink, version: 4, source: s}\n", "needs gbs_per_link"},
		{"bad encoding", "  - {link: pcie, version: 3, gt_s: 8, encoding: 64b/66b, source: s}\n", "an encoding of 8b/10b or 128b/130b"},
		{"unknown link", "  - {link: infiniband, version: 4, gbs_per_link: 50, source: s}\n", `link "infiniband" is neither nvlink nor pcie`},
		{"no version", "  - {link: nvlink, gbs_per_link: 25, source: s}\n", "needs a version"},
		{"no source", "  - {link: nvlink, version: 4, gbs_per_link: 25}\n", "has no source"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "m.yaml")
			if err := os.WriteFile(p, []byte(head+tt.row), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(p)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "m.yaml:4") {
				t.Errorf("err = %v, want %q at m.yaml:4", err, tt.want)
			}
		})
	}
	// A later file's row replaces the built-in one with the same key.
	p := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(p, []byte(head+"  - {link: nvlink, version: 4, archs: [sm_90], gbs_per_link: 20, source: s}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if db, err = Load(p); err != nil {
		t.Fatal(err)
	}
	if l, _ := db.NVLink(4, "sm_90"); l.GBsPerLink != 20 {
		t.Errorf("replaced NVLink 4 row %+v", l)
	}
}
