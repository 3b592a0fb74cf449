package matrix

import (
	"fmt"
	"maps"
	"slices"
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
	// NCCL all-reduce bus bandwidth over the link it ran on (Link): the
	// NVLinks a GPU has, or PCIe.
	"nccl_allreduce_busbw_share": "of the link's bandwidth per direction",
}

// maxShare is the largest share a reference may give: 1 for a datasheet
// peak; an all-reduce's bus bandwidth may pass its links' rate, since
// NCCL's NVLS algorithm reduces inside the NVSwitch and fewer bytes cross
// the links than the ring formula counts.
func maxShare(figure string) float64 {
	if figure == "nccl_allreduce_busbw_share" {
		return 1.5
	}
	return 1
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
		bad = append(bad, fmt.Sprintf("reference figure %q is none of %s", r.Figure, strings.Join(slices.Sorted(maps.Keys(ReferenceFigures)), ", ")))
	}
	if r.Value <= 0 || (strings.HasSuffix(r.Figure, "_share") && r.Value > maxShare(r.Figure)) {
		bad = append(bad, fmt.Sprintf("reference %s for %s: value %g must be positive (a share at most %g)", r.Figure, r.GPU, r.Value, maxShare(r.Figure)))
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

// Link is the bandwidth of one generation of a link between GPUs (NVLink)
// or between a GPU and its host and peers (PCIe), as NVIDIA and PCI-SIG
// publish it: what NCCL's bus bandwidth and the host copies are judged
// against. A generation without a row is not judged.
type Link struct {
	// Link is nvlink or pcie.
	Link string `yaml:"link" json:"link"`
	// Version is the NVLink generation's major version (NVML's 3.0 and 3.1
	// are both 3) or the PCIe generation.
	Version int `yaml:"version" json:"version"`
	// Archs limits an NVLink row to GPUs of these architectures: one
	// generation's links differ between chips (GA102's NVLink 3 links are
	// narrower than A100's). Empty: any GPU.
	Archs []string `yaml:"archs" json:"archs,omitempty"`
	// GBsPerLink is an NVLink link's bandwidth per direction in GB/s (a
	// datasheet's per-GPU NVLink figure counts both directions of all
	// links).
	GBsPerLink float64 `yaml:"gbs_per_link" json:"gbs_per_link,omitempty"`
	// GTs and Encoding are a PCIe generation's transfer rate per lane and
	// its line encoding (8b/10b, 128b/130b).
	GTs      float64 `yaml:"gt_s" json:"gt_s,omitempty"`
	Encoding string  `yaml:"encoding" json:"encoding,omitempty"`
	Row      `yaml:",inline"`
}

// Key identifies a link row: a later file's row with the same key
// replaces it.
func (l Link) Key() string {
	return strings.ToLower(fmt.Sprintf("%s/%d/%s", l.Link, l.Version, strings.Join(l.Archs, ",")))
}

// encodingEfficiency is the share of a PCIe lane's transfers that carry
// data, by line encoding.
var encodingEfficiency = map[string]float64{"8b/10b": 8.0 / 10, "128b/130b": 128.0 / 130}

// LaneGBs is a PCIe row's usable bandwidth per lane and direction in
// GB/s: the transfer rate times the encoding's efficiency, over 8 bits.
func (l Link) LaneGBs() float64 { return l.GTs * encodingEfficiency[l.Encoding] / 8 }

// NVLink is the NVLink row for a generation on a GPU of architecture arch:
// a row naming the architecture wins over one for any GPU. Version 0 (a
// GPU none of whose links is up to ask) is the row naming arch.
func (db *DB) NVLink(version int, arch string) (Link, bool) {
	var generic *Link
	for i, l := range db.Links {
		if l.Link != "nvlink" || (l.Version != version && version != 0) {
			continue
		}
		if version == 0 && !slices.Contains(l.Archs, arch) {
			continue
		}
		if slices.Contains(l.Archs, arch) {
			return l, true
		}
		if len(l.Archs) == 0 && generic == nil {
			generic = &db.Links[i]
		}
	}
	if generic != nil {
		return *generic, true
	}
	return Link{}, false
}

// PCIeLaneGBs is a PCIe generation's usable bandwidth per lane and
// direction in GB/s; false when the matrix has no row for it.
func (db *DB) PCIeLaneGBs(gen int) (float64, bool) {
	for _, l := range db.Links {
		if l.Link == "pcie" && l.Version == gen {
			return l.LaneGBs(), true
		}
	}
	return 0, false
}

// validateLink says what is wrong with a link row.
func validateLink(l Link) []string {
	var bad []string
	switch l.Link {
	case "nvlink":
		if l.GBsPerLink <= 0 {
			bad = append(bad, fmt.Sprintf("link nvlink %d needs gbs_per_link, the GB/s of one link in one direction", l.Version))
		}
	case "pcie":
		if _, ok := encodingEfficiency[l.Encoding]; !ok || l.GTs <= 0 {
			bad = append(bad, fmt.Sprintf("link pcie %d needs gt_s and an encoding of 8b/10b or 128b/130b", l.Version))
		}
	default:
		bad = append(bad, fmt.Sprintf("link %q is neither nvlink nor pcie", l.Link))
	}
	if l.Version <= 0 {
		bad = append(bad, fmt.Sprintf("link %s needs a version (the NVLink or PCIe generation, 4)", l.Link))
	}
	return bad
}
