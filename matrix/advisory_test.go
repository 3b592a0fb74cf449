package matrix

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAdvisoryRows(t *testing.T) {
	const head = "sources: [{id: ours, url: https://security.example.com/a}]\nadvisories:\n"
	tests := []struct {
		name, rows, err string
	}{
		{"python", "  - {id: CVE-2099-0001, kind: python, package: torch, fixed: 2.99.0, severity: high, cvss: 8, summary: s, source: ours}\n", ""},
		{"env", "  - {id: CVE-2099-0002, kind: env, env: LD_AUDIT, host: toolkit <= 9, fixed: 9.1, severity: critical, summary: s, source: ours}\n", ""},
		{"tool", "  - {id: CVE-2099-0003, also: [CVE-2099-0004], kind: cuda-tool, tool: x, names: [x], files: ['(^|/)bin/x$'], fixed: 14.0, severity: low, summary: s, source: ours}\n", ""},
		{"container toolkit", "  - {id: CVE-2099-0005, kind: container-toolkit, fixed: 9.1, severity: high, cvss: 8, summary: s, source: ours}\n", ""},
		{"container toolkit with a package", "  - {id: CVE-2099-0005, kind: container-toolkit, package: torch, fixed: 9.1, severity: high, summary: s, source: ours}\n", "drop package, env and tool"},
		{"bad id", "  - {id: cve-1, kind: python, package: torch, fixed: 1.0, severity: low, summary: s, source: ours}\n", "must look like CVE-2025-32434"},
		{"bad ghsa", "  - {id: CVE-2099-0001, ghsa: GHSA-1, kind: python, package: torch, fixed: 1.0, severity: low, summary: s, source: ours}\n", "must look like GHSA"},
		{"bad kind", "  - {id: CVE-2099-0001, kind: npm, fixed: 1.0, severity: low, summary: s, source: ours}\n", "kind must be python, env, cuda-tool or container-toolkit"},
		{"bad severity", "  - {id: CVE-2099-0001, kind: python, package: torch, fixed: 1.0, severity: severe, summary: s, source: ours}\n", "severity must be"},
		{"no fixed", "  - {id: CVE-2099-0001, kind: python, package: torch, severity: low, summary: s, source: ours}\n", "needs summary and fixed"},
		{"package not normalized", "  - {id: CVE-2099-0001, kind: python, package: Torch, fixed: 1.0, severity: low, summary: s, source: ours}\n", "normalized"},
		{"env without host", "  - {id: CVE-2099-0001, kind: env, env: LD_PRELOAD, fixed: 1.0, severity: low, summary: s, source: ours}\n", "needs env and host"},
		{"bad pattern", "  - {id: CVE-2099-0001, kind: cuda-tool, tool: x, names: [x], files: ['('], fixed: 1.0, severity: low, summary: s, source: ours}\n", "file pattern"},
		{"no source", "  - {id: CVE-2099-0001, kind: python, package: torch, fixed: 1.0, severity: low, summary: s}\n", "has no source"},
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
			id, _, _ := strings.Cut(strings.TrimPrefix(tt.rows, "  - {id: "), ",")
			found := false
			for _, a := range db.Advisories {
				if a.ID == id {
					found = true
				}
			}
			if !found {
				t.Errorf("advisory %s not loaded", id)
			}
		})
	}
}

// TestBuiltinAdvisories pins the rows the sources give (data/advisories.yaml).
func TestBuiltinAdvisories(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]Advisory{}
	for _, a := range db.Advisories {
		byID[a.ID] = a
		if len(db.Sources[a.Source].URL) == 0 {
			t.Errorf("%s: source %q has no url", a.ID, a.Source)
		}
	}
	for _, want := range []struct {
		id, kind, fixed, what string
	}{
		{"CVE-2025-32434", "python", "2.6.0", "torch"},
		{"CVE-2026-24747", "python", "2.10.0", "torch"},
		{"CVE-2025-23266", "env", "1.17.8", "LD_PRELOAD"},
		{"CVE-2025-33228", "cuda-tool", "13.1", "Nsight Systems"},
		{"CVE-2025-23339", "cuda-tool", "13.0", "cuobjdump"},
		{"CVE-2025-23338", "cuda-tool", "13.0", "nvdisasm"},
		{"CVE-2024-0132", "container-toolkit", "1.16.2", ""},
		{"CVE-2025-23359", "container-toolkit", "1.17.4", ""},
		{"CVE-2025-23267", "container-toolkit", "1.17.8", ""},
		{"CVE-2026-24260", "container-toolkit", "1.19.1", ""},
	} {
		a, ok := byID[want.id]
		what := a.Package + a.Env + a.Tool
		if !ok || string(a.Kind) != want.kind || a.Fixed.String() != want.fixed || what != want.what {
			t.Errorf("%s: %+v", want.id, a)
		}
	}
	// The bulletins' ranges are "up to and including" the release before
	// Fixed; env rows are toolkit flaws too (their trigger is the image).
	for _, tt := range []struct {
		id, toolkit string
		affected    bool
	}{
		{"CVE-2024-0132", "1.16.1", true},
		{"CVE-2024-0132", "1.16.2", false},
		{"CVE-2025-23359", "1.17.3", true},
		{"CVE-2025-23359", "1.17.4", false},
		{"CVE-2025-23266", "1.17.7", true},
		{"CVE-2025-23266", "1.17.8", false},
		{"CVE-2025-23267", "1.17.7", true},
		{"CVE-2026-24260", "1.19.0", true},
		{"CVE-2026-24260", "1.19.1", false},
		{"CVE-2026-24260", "1.20.0", false},
		{"CVE-2025-32434", "1.0", false}, // a torch row is no toolkit flaw
	} {
		if got := byID[tt.id].AffectsToolkit(MustVersion(tt.toolkit)); got != tt.affected {
			t.Errorf("%s AffectsToolkit(%s) = %v, want %v", tt.id, tt.toolkit, got, tt.affected)
		}
	}
	nsys := byID["CVE-2025-33228"]
	for p, want := range map[string]bool{
		"opt/nvidia/nsight-systems/2024.5.1/target-linux-x64/nsys":                                             true, // the standalone installer's layout
		"usr/local/cuda-12.6/nsight-systems-2024.5.1/target-linux-x64/nsys":                                    true,
		"usr/local/cuda-12.6/nsight-systems-2024.5.1/target-linux-x64/python/packages/process_nsys_rep_cli.py": true,
		"usr/local/bin/nsys":           true,
		"usr/local/cuda/bin/cuobjdump": false,
		"home/me/nsys":                 false,
	} {
		if got := nsys.MatchFile(p); got != want {
			t.Errorf("Nsight Systems MatchFile(%s) = %v, want %v", p, got, want)
		}
	}
	if !byID["CVE-2025-23339"].MatchFile("usr/local/cuda-12.2/bin/cuobjdump") || byID["CVE-2025-23339"].MatchFile("usr/local/cuda-12.2/bin/cuobjdump.txt") {
		t.Error("cuobjdump patterns")
	}
}
