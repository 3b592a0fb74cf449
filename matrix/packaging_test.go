package matrix

import (
	"slices"
	"strings"
	"testing"
)

// TestTargetPackaging: each wrapping rule of a target, what
// CheckPackaging fails, and what Convert plans (and leaves failing).
func TestTargetPackaging(t *testing.T) {
	sagemaker := Target{Name: "sm/p5", Platforms: []string{"linux/amd64"}, MediaTypes: []ManifestFormat{FormatDocker}, Compressions: []Compression{CompressionGzip}}
	anyIndex := Target{Name: "k8s", Platforms: []string{"linux/amd64", "linux/arm64"}, Index: true}
	ociZstd := Target{Name: "oci", MediaTypes: []ManifestFormat{FormatOCI}, Compressions: []Compression{CompressionZstd}}
	buildkit := Packaging{MediaType: MediaOCIIndex, Index: true, Platforms: []string{"linux/amd64", "linux/arm64"}, Attestations: 2,
		Platform: "linux/amd64", ImageMediaType: MediaOCIManifest, Compressions: []Compression{CompressionZstd}}
	armOnly := Packaging{MediaType: MediaDockerManifest, Platforms: []string{"linux/arm64"}, Platform: "linux/arm64", ImageMediaType: MediaDockerManifest, Compressions: []Compression{CompressionGzip}}
	dockerGzip := Packaging{MediaType: MediaDockerManifest, Platforms: []string{"linux/amd64"}, Platform: "linux/amd64", ImageMediaType: MediaDockerManifest, Compressions: []Compression{CompressionGzip}}
	tests := []struct {
		name      string
		t         Target
		p         Packaging
		fails     []string // CheckPackaging on p
		changes   []string // Convert's changes
		failAfter []string // CheckPackaging on the converted wrapping
	}{
		{"buildkit for sagemaker", sagemaker, buildkit, []string{"index", "attestations", "media-type", "compression"}, []string{"platform", "media-type", "compression"}, nil},
		{"arm64 only for sagemaker", sagemaker, armOnly, []string{"platform"}, nil, []string{"platform"}},
		{"docker gzip for sagemaker", sagemaker, dockerGzip, nil, nil, nil},
		{"buildkit for an index fleet", anyIndex, buildkit, []string{"attestations"}, []string{"attestations"}, nil},
		{"zstd into docker with no compression rule", Target{Name: "d", MediaTypes: []ManifestFormat{FormatDocker}}, Packaging{ImageMediaType: MediaOCIManifest, Platforms: []string{"linux/amd64"}, Compressions: []Compression{CompressionZstd}}, []string{"media-type", "compression"}, []string{"media-type", "compression"}, nil},
		{"gzip to zstd for an OCI zstd fleet", ociZstd, dockerGzip, []string{"media-type", "compression"}, []string{"media-type", "compression"}, nil},
		{"arm64 index for sagemaker", sagemaker, Packaging{MediaType: MediaOCIIndex, Index: true, Platforms: []string{"linux/arm64"}, Attestations: 1, Platform: "linux/arm64", ImageMediaType: MediaOCIManifest, Compressions: []Compression{CompressionGzip}}, []string{"platform", "index", "attestations", "media-type"}, []string{"platform", "media-type"}, []string{"platform"}},
	}
	failed := func(t Target, fs []Finding) []string {
		var out []string
		for _, f := range fs {
			if f.Status == Fail {
				out = append(out, strings.TrimPrefix(f.Name, "target:"+t.Name+":"))
			}
		}
		return out
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := failed(tt.t, tt.t.CheckPackaging(tt.p)); !slices.Equal(got, tt.fails) {
				t.Errorf("CheckPackaging fails %v, want %v", got, tt.fails)
			}
			c := tt.t.Convert(tt.p)
			var whats []string
			for _, ch := range c.Changes {
				whats = append(whats, ch.What)
			}
			if !slices.Equal(whats, tt.changes) {
				t.Errorf("Convert changes %v, want %v", whats, tt.changes)
			}
			if got := failed(tt.t, tt.t.CheckPackaging(c.After)); !slices.Equal(got, tt.failAfter) {
				t.Errorf("after the conversion fails %v, want %v", got, tt.failAfter)
			}
		})
	}
}

func TestTargetCheckSize(t *testing.T) {
	for _, tt := range []struct {
		sizeOf                   string
		compressed, uncompressed int64
		want                     Status
	}{
		{"compressed", 9e9, 20e9, Pass},
		{"compressed", 11e9, 20e9, Fail},
		{"uncompressed", 9e9, 11e9, Fail},
		{"uncompressed", 9e9, 10e9, Pass},
	} {
		tg := Target{Name: "ali", MaxSize: 10e9, SizeOf: tt.sizeOf}
		f, ok := tg.CheckSize(tt.compressed, tt.uncompressed)
		if !ok || f.Status != tt.want || f.Name != "target:ali:size" || !strings.Contains(f.Message, "10 GB") {
			t.Errorf("%s %d/%d: %+v", tt.sizeOf, tt.compressed, tt.uncompressed, f)
		}
	}
	if _, ok := (Target{Name: "x"}).CheckSize(1e12, 1e12); ok {
		t.Error("a target without a limit judged the size")
	}
}

func TestTargetPlatform(t *testing.T) {
	for _, tt := range []struct {
		hosts, image []string
		want         string
		ok           bool
	}{
		{[]string{"linux/amd64"}, []string{"linux/arm64", "linux/amd64"}, "linux/amd64", true},
		{[]string{"linux/arm64", "linux/amd64"}, []string{"linux/amd64", "linux/arm64/v8"}, "linux/arm64/v8", true},
		{[]string{"linux/amd64"}, []string{"linux/arm64"}, "", false},
		{nil, []string{"linux/arm64", "linux/amd64"}, "linux/amd64", true},
		{[]string{"linux/arm/v7"}, []string{"linux/arm/v6"}, "", false},
	} {
		got, ok := Target{Platforms: tt.hosts}.Platform(tt.image)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Platform(%v) on %v = %q %v", tt.image, tt.hosts, got, ok)
		}
	}
}
