package matrix

import (
	"fmt"
	"strings"
)

// Reference is a published performance figure for a GPU: what one card of
// that model reached on one benchmark, under stated conditions and with
// stated software. A GPU without a reference row has none; nothing is
// derived or guessed for it.
type Reference struct {
	// GPU names a row of the GPU table (H100-SXM, A100-SXM4-80GB).
	GPU string `yaml:"gpu" json:"gpu"`
	// Figure is the figure's key, one of ReferenceFigures: a benchmark
	// figure as the probe records it (resnet50_images_per_s), or the share
	// of the GPU row's datasheet peak a benchmark reached (gemm_bf16_share).
	Figure string `yaml:"figure" json:"figure"`
	// Value is images/s for a throughput, a fraction (0.803) for a share.
	Value float64 `yaml:"value" json:"value"`
	// Precision is how it was computed: amp-fp16 (automatic mixed
	// precision in float16), tf32, fp32, bf16.
	Precision string `yaml:"precision" json:"precision"`
	// Batch is the batch per GPU, 0 where it does not apply (GEMM).
	Batch int `yaml:"batch" json:"batch,omitempty"`
	// Software is what it was measured with: container or framework, and
	// the benchmark program.
	Software string `yaml:"software" json:"software"`
	// Torch is the torch version it was measured with, when the source
	// says; figures measured with another torch are not like for like.
	Torch string `yaml:"torch" json:"torch,omitempty"`
	Row   `yaml:",inline"`
}

// ReferenceFigures are the figures a reference may give, with their unit.
var ReferenceFigures = map[string]string{
	"resnet50_images_per_s":       "images/s", // ResNet-50 training, one GPU
	"resnet50_infer_images_per_s": "images/s", // ResNet-50 inference, one GPU
	"gemm_bf16_share":             "of the bf16 peak",
	"gemm_fp16_share":             "of the fp16 peak",
	"memory_bandwidth_share":      "of the memory bandwidth peak",
}

// Key identifies a reference row: a later file's row with the same GPU,
// figure, precision and batch replaces it.
func (r Reference) Key() string {
	return strings.ToLower(fmt.Sprintf("%s/%s/%s/%d", r.GPU, r.Figure, r.Precision, r.Batch))
}

// ReferencesFor are the reference rows of the GPU row named gpu.
func (db *DB) ReferencesFor(gpu string) []Reference {
	var out []Reference
	for _, r := range db.References {
		if strings.EqualFold(r.GPU, gpu) {
			out = append(out, r)
		}
	}
	return out
}

// validateReference says what is wrong with a reference row.
func (db *DB) validateReference(r Reference) []string {
	var bad []string
	if _, err := db.LookupGPU(r.GPU); err != nil || !db.hasGPURow(r.GPU) {
		bad = append(bad, fmt.Sprintf("reference names GPU %q, which is no row of the GPU table (use its name, e.g. H100-SXM)", r.GPU))
	}
	if _, ok := ReferenceFigures[r.Figure]; !ok {
		bad = append(bad, fmt.Sprintf("reference figure %q is none of resnet50_images_per_s, resnet50_infer_images_per_s, gemm_bf16_share, gemm_fp16_share, memory_bandwidth_share", r.Figure))
	}
	if r.Value <= 0 || (strings.HasSuffix(r.Figure, "_share") && r.Value > 1) {
		bad = append(bad, fmt.Sprintf("reference %s for %s: value %g must be positive (a share at most 1)", r.Figure, r.GPU, r.Value))
	}
	if r.Precision == "" || r.Software == "" {
		bad = append(bad, fmt.Sprintf("reference %s for %s needs precision and software: a figure is comparable only with one measured the same way", r.Figure, r.GPU))
	}
	return bad
}

func (db *DB) hasGPURow(name string) bool {
	for _, g := range db.GPUs {
		if strings.EqualFold(g.Name, name) {
			return true
		}
	}
	return false
}
