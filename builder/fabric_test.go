package builder

import (
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/parser"

	"github.com/gpuimg/gpuimg/matrix"
)

// TestFabricLayer: --fabric adds the fabric's user space in one step right
// on the base, in the python stage and in the layered image alike (so
// BuildKit runs it once and variants on one base share the layer), and
// refuses what it cannot pin or what the stack was not resolved for.
func TestFabricLayer(t *testing.T) {
	c := func(fabric, os string) matrix.Constraints {
		return matrix.Constraints{CUDA: matrix.MustConstraint("12.2"), Torch: cons("2.3"), OS: os, Fabric: fabric}
	}
	const sum = "5b2f4e8d7c6a9b0e1f2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1"
	const rocky = "docker.io/nvidia/cuda:12.2.2-runtime-rockylinux9@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	tests := []struct {
		name   string
		def    Definition
		want   []string // lines of the step (and what follows it), in order
		notIn  string   // a line no Dockerfile may have
		err    string
		noStep bool
	}{
		{name: "infiniband on ubuntu", def: Definition{Stack: resolve(t, c("infiniband", "")), Base: pinned, Extras: Extras{Fabric: "infiniband"}},
			want: []string{"# Fabric infiniband: libibverbs1, ibverbs-providers from ubuntu22.04's package repositories.", "apt-get install -y --no-install-recommends libibverbs1 ibverbs-providers"}, notIn: "LD_LIBRARY_PATH"},
		{name: "infiniband on rocky", def: Definition{Stack: resolve(t, c("infiniband", "rockylinux9")), Base: rocky, Extras: Extras{Fabric: "infiniband"}},
			want: []string{"dnf install -y --setopt=install_weak_deps=False libibverbs "}},
		{name: "efa pinned", def: Definition{Stack: resolve(t, c("efa", "")), Base: pinned, Extras: Extras{Fabric: "efa", FabricSource: "https://mirror.example.com/efa/aws-efa-installer-1.49.0.tar.gz#sha256=" + sum}},
			want: []string{"FROM scratch AS gpuimg-fabric-archive", "ADD --checksum=sha256:" + sum + " https://mirror.example.com/efa/aws-efa-installer-1.49.0.tar.gz /installer.tar.gz",
				"cd /tmp/gpuimg-fabric/aws-efa-installer && ./efa_installer.sh -y --skip-kmod --skip-limit-conf --no-verify", "ENV LD_LIBRARY_PATH=/opt/amazon/ofi-nccl/lib64:/opt/amazon/efa/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"}},
		{name: "efa unpinned", def: Definition{Stack: resolve(t, c("efa", "")), Base: pinned, Extras: Extras{Fabric: "efa"}},
			err: "fabric efa installs from https://s3-us-west-2.amazonaws.com/aws-efa-installer/aws-efa-installer-1.49.0.tar.gz, whose sha256 the matrix does not record: pin it with --fabric-source https://s3-us-west-2.amazonaws.com/aws-efa-installer/aws-efa-installer-1.49.0.tar.gz#sha256=HEX"},
		{name: "efa source without sha256", def: Definition{Stack: resolve(t, c("efa", "")), Base: pinned, Extras: Extras{Fabric: "efa", FabricSource: "https://mirror.example.com/efa.tar.gz"}},
			err: "is not pinned: want URL#sha256=HEX"},
		{name: "the node's fabric adds nothing", def: Definition{Stack: resolve(t, c("tcpxo", "")), Base: pinned, Extras: Extras{Fabric: "tcpxo"}}, noStep: true},
		{name: "stack resolved without it", def: Definition{Stack: resolve(t, c("", "")), Base: pinned, Extras: Extras{Fabric: "infiniband"}},
			err: "the stack was not resolved for fabric infiniband"},
		{name: "stack names one the build does not add", def: Definition{Stack: resolve(t, c("infiniband", "")), Base: pinned},
			err: "the stack names fabric infiniband, which the build does not add: build with --fabric infiniband"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plain, err := Dockerfile(tt.def)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Dockerfile: %v, want %q", err, tt.err)
				}
				return
			}
			must(t, err)
			layered, err := LayeredDockerfile(tt.def, torchPlan, 0)
			must(t, err)
			for name, df := range map[string]string{"Dockerfile": plain, "LayeredDockerfile": layered} {
				if _, err := parser.Parse(strings.NewReader(df)); err != nil {
					t.Fatalf("%s does not parse: %v", name, err)
				}
				if tt.noStep {
					if strings.Contains(df, "# Fabric ") {
						t.Errorf("%s adds a fabric step:\n%s", name, df)
					}
					continue
				}
				at := 0
				for _, w := range tt.want {
					i := strings.Index(df[at:], w)
					if i < 0 {
						t.Fatalf("%s lacks %q after byte %d:\n%s", name, w, at, df)
					}
					at += i
				}
				if tt.notIn != "" && strings.Contains(df, tt.notIn) {
					t.Errorf("%s has %q", name, tt.notIn)
				}
				// The step comes right on the base: the first RUN after
				// the FROM of the python stage (and of the layered image)
				// is the fabric's, before any Python.
				for _, stage := range []string{" AS " + stagePython + "\n", " AS " + StageImage + "\n"} {
					i := strings.Index(df, stage)
					if i < 0 || name == "Dockerfile" && stage == " AS "+StageImage+"\n" {
						continue
					}
					rest := df[i:]
					run := strings.Index(rest, "\nRUN")
					fab := strings.Index(rest, "# Fabric ")
					if fab < 0 || run < fab {
						t.Errorf("%s: in stage%s the first step is not the fabric's:\n%s", name, strings.TrimSpace(stage), rest[:min(len(rest), 600)])
					}
				}
			}
		})
	}
}

func TestParseFabricSource(t *testing.T) {
	const sum = "5b2f4e8d7c6a9b0e1f2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1"
	for _, tt := range []struct{ in, url, err string }{
		{in: "https://m.example.com/a.tar.gz#sha256=" + sum, url: "https://m.example.com/a.tar.gz"},
		{in: "https://m.example.com/a.tar.gz", err: "is not pinned"},
		{in: "https://m.example.com/a.tar.gz#sha256=abc", err: "is not pinned"},
		{in: "https://m.example.com/a.tar.gz#md5=" + sum, err: "is not pinned"},
		{in: "file:///tmp/a.tar.gz#sha256=" + sum, err: "http:// or https://"},
	} {
		got, err := ParseFabricSource(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got.URL != tt.url || got.SHA256 != sum {
			t.Errorf("%s: %+v, %v", tt.in, got, err)
		}
	}
	if err := (Extras{FabricSource: "https://m.example.com/a.tar.gz#sha256=" + sum}).Validate(); err == nil || !strings.Contains(err.Error(), "without fabric") {
		t.Errorf("a source without a fabric: %v", err)
	}
}
