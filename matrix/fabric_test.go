package matrix

import (
	"errors"
	"os"
	"path/filepath"
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
