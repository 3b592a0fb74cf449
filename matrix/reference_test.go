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
