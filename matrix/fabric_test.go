package matrix

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestFabrics(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(db.FabricNames(), " "); got != "efa gib infiniband tcpxo" {
		t.Errorf("fabrics %q", got)
	}
	efa, err := db.Fabric("EFA")
	if err != nil {
		t.Fatal(err)
	}
	if efa.Plugin == nil || efa.Plugin.Releases[0].Version.String() != "1.21.1" {
		t.Fatalf("efa plugin releases not newest first: %+v", efa.Plugin)
	}
	lo, tested := efa.Plugin.NCCLRange()
	if lo.String() != "2.17.1" || tested.String() != "2.31.2" {
		t.Errorf("NCCL range %s, newest tested %s; want 2.17.1 and 2.31.2 (aws-ofi-nccl's release notes)", lo, tested)
	}
	for v, want := range map[string]NCCLFit{"2.16.5": NCCLTooOld, "2.17.1": NCCLSupported, "2.22.3": NCCLSupported, "2.31.2": NCCLSupported, "2.32.3": NCCLUntested} {
		if got := efa.Plugin.FitNCCL(MustVersion(v)); got != want {
			t.Errorf("FitNCCL(%s) = %d, want %d", v, got, want)
		}
	}
	if _, err := db.Fabric("omnipath"); !errors.Is(err, ErrUnknownFabric) || !strings.Contains(err.Error(), "efa, gib, infiniband, tcpxo") {
		t.Errorf("unknown fabric: %v", err)
	}
	for name, want := range map[string]string{"eks/p5": "efa", "gke/a3-mega": "tcpxo", "gke/a3-ultra": "gib", "sagemaker/p5": ""} {
		tg, err := db.Target(name)
		if err != nil || tg.Fabric != want {
			t.Errorf("target %s: fabric %q (%v), want %q", name, tg.Fabric, err, want)
		}
	}
	for _, e := range efa.Env {
		switch e.Name {
		case "NCCL_NET":
			if !e.Disables("Socket") || e.Disables("aws libfabric") || e.Disables("Libfabric") {
				t.Errorf("NCCL_NET rule %+v", e)
			}
		case "NCCL_NET_PLUGIN":
			if !e.Disables("none") || e.Disables("ofi") {
				t.Errorf("NCCL_NET_PLUGIN rule %+v", e)
			}
		}
	}
}

func TestFabricRows(t *testing.T) {
	const head = "sources: [{id: ours, url: https://wiki.example.com/cluster}]\n"
	tests := []struct{ name, rows, err string }{
		{"plugin without releases", "fabrics:\n  - {name: slingshot, plugin: {name: x, files: [libnccl-net.so]}, source: ours}\n", "plugin needs name, files and releases"},
		{"provider without needs", "fabrics:\n  - {name: slingshot, provider: cxi, source: ours}\n", "needs provider_needs"},
		{"env allow and deny", "fabrics:\n  - {name: slingshot, env: [{name: X, allow: [a], deny: [b], why: y}], source: ours}\n", "allow or deny (not both)"},
		{"target names no fabric row", "targets:\n  - {name: onprem/x, fabric: slingshot, source: ours}\n", `fabric "slingshot" is not a row`},
		{"fabric without source", "fabrics:\n  - {name: slingshot}\n", "has no source"},
		{"team fabric", "fabrics:\n  - {name: slingshot, libraries: [{soname: libcxi.so.1, what: libcxi}], source: ours}\ntargets:\n  - {name: onprem/x, fabric: slingshot, source: ours}\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "m.yaml")
			if err := os.WriteFile(p, []byte(head+tt.rows), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(p)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("Load: %v, want %q", err, tt.err)
			}
		})
	}
}

// TestResolveFabric: a fabric's plugin refuses frameworks whose NCCL it
// does not support, and the stack records what the build adds for the
// fabric on its OS.
func TestResolveFabric(t *testing.T) {
	const overlay = `sources: [{id: ours, url: https://wiki.example.com/cluster}]
fabrics:
  - name: slingshot
    plugin:
      name: ofi-cxi
      files: [libnccl-net.so]
      releases: [{version: 1.0.0, min_nccl: 2.19.0, tested_nccl: [2.20.5], source: ours}]
    build: {apt: [libcxi1], dnf: [libcxi], source: ours}
    source: ours
`
	p := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(p, []byte(overlay), 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	v := func(s string) *Constraint {
		c, err := ParseConstraint(s)
		if err != nil {
			t.Fatal(err)
		}
		return &c
	}
	tests := []struct {
		name string
		c    Constraints
		// torch is the torch the stack gets; err a part of the refusal.
		torch, err string
		fabric     StackFabric
		note       string
	}{
		{name: "NCCL 2.18.1 too old", c: Constraints{Torch: v("2.1.2"), CUDA: *v("12"), Fabric: "slingshot"}, err: "torch 2.1.2 loads NCCL 2.18.1, older than every recorded release of ofi-cxi (fabric slingshot) supports (NCCL 2.19.0 or later); choose a newer torch"},
		{name: "another torch 2.1", c: Constraints{Torch: v("2.1"), CUDA: *v("12"), Fabric: "slingshot"}, torch: "2.1.1", fabric: StackFabric{Name: "slingshot", Packages: []string{"libcxi1"}},
			note: "fabric slingshot: the NCCL torch 2.1.1 loads is not recorded, so it was not checked against ofi-cxi; gpuimg validate --fabric slingshot reads it from the image"},
		{name: "dnf packages on EL", c: Constraints{Torch: v("2.3"), Fabric: "slingshot", OS: "rockylinux9"}, torch: "2.3.1", fabric: StackFabric{Name: "slingshot", Packages: []string{"libcxi"}}},
		{name: "infiniband from the OS", c: Constraints{Torch: v("2.3"), Fabric: "infiniband", OS: "ubuntu22.04"}, torch: "2.3.1", fabric: StackFabric{Name: "infiniband", Packages: []string{"libibverbs1", "ibverbs-providers"}}},
		{name: "efa's installer", c: Constraints{Torch: v("2.3"), Fabric: "efa"}, torch: "2.3.1", fabric: StackFabric{Name: "efa", LibraryPath: []string{"/opt/amazon/ofi-nccl/lib64", "/opt/amazon/efa/lib64"}}},
		{name: "the node's", c: Constraints{Torch: v("2.3"), Fabric: "tcpxo"}, torch: "2.3.1", fabric: StackFabric{Name: "tcpxo", HostDir: "/usr/local/nvidia/lib64"}},
		{name: "unknown", c: Constraints{Torch: v("2.3"), Fabric: "omnipath"}, err: "unknown fabric"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := db.Resolve(tt.c)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Resolve: %v, want an error with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := st.Frameworks[FrameworkTorch].Version; got != tt.torch {
				t.Errorf("torch %s, want %s", got, tt.torch)
			}
			f := st.Fabric
			if f == nil {
				t.Fatal("stack has no fabric")
			}
			if f.Name != tt.fabric.Name || strings.Join(f.Packages, " ") != strings.Join(tt.fabric.Packages, " ") || f.HostDir != tt.fabric.HostDir ||
				strings.Join(f.LibraryPath, " ") != strings.Join(tt.fabric.LibraryPath, " ") {
				t.Errorf("fabric %+v, want %+v", *f, tt.fabric)
			}
			if (f.Installer != nil) != (tt.fabric.Name == "efa") {
				t.Errorf("installer %+v", f.Installer)
			}
			if f.Installer != nil && f.Installer.ArchiveURL() != "https://s3-us-west-2.amazonaws.com/aws-efa-installer/aws-efa-installer-1.49.0.tar.gz" {
				t.Errorf("installer archive %s", f.Installer.ArchiveURL())
			}
			if !slices.ContainsFunc(st.Notes, func(n string) bool { return strings.HasPrefix(n, "fabric "+tt.fabric.Name+": ") }) {
				t.Errorf("no note on the fabric: %q", st.Notes)
			}
			if tt.note != "" && !slices.Contains(st.Notes, tt.note) {
				t.Errorf("notes %q lack %q", st.Notes, tt.note)
			}
		})
	}
}

// TestResolveTargetFabric: a target whose fleet uses a fabric says so
// when the build does not add it.
func TestResolveTargetFabric(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	torch := MustConstraint("2.3")
	for _, tt := range []struct{ fabric, note string }{
		{"", "target eks/p5's fleet uses fabric efa for multi-node jobs: build with --fabric efa to add its user space and have the frameworks' NCCL checked against it"},
		{"infiniband", "the given fabric infiniband is not target eks/p5's, efa"},
		{"efa", ""},
	} {
		st, err := db.Resolve(Constraints{Torch: &torch, Target: "eks/p5", Fabric: tt.fabric})
		if err != nil {
			t.Fatal(err)
		}
		has := slices.ContainsFunc(st.Notes, func(n string) bool {
			return strings.Contains(n, "eks/p5's fleet uses") || strings.Contains(n, "is not target eks/p5's")
		})
		if tt.note == "" && has || tt.note != "" && !slices.Contains(st.Notes, tt.note) {
			t.Errorf("fabric %q: notes %q, want %q", tt.fabric, st.Notes, tt.note)
		}
	}
}
