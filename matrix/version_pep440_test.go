package matrix

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/gpuimg/gpuimg/matrix/pep440"
)

// TestVersionOrderIsPEP440: for every version of pypa/packaging's ordered
// table (matrix/pep440/testdata, with its commit) that Version holds, and
// versions with numbers above 2^32, Version.Compare agrees with PEP 440's
// order of the public versions (package pep440).
func TestVersionOrderIsPEP440(t *testing.T) {
	b, err := os.ReadFile("pep440/testdata/pypa-packaging.json")
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Version struct {
			Ordered []string `json:"ordered"`
		} `json:"version"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	all := append(slices.Clone(p.Version.Ordered), "2.5.0.dev5000000000", "2.5.0.dev1", "2.5.0rc4294967297", "2.5.0rc1",
		"8.9.2.26", "8.9.2", "535.104.05", "535.104.5", "12.2", "12.2.0", "2.3.1+cu121")
	type pair struct {
		m Version
		p pep440.Version
	}
	var held []pair
	for _, s := range all {
		m, err := ParseVersion(s)
		if err != nil {
			continue // not a version the matrix holds (epochs, post-releases …)
		}
		held = append(held, pair{m, pep440.MustParse(s)})
	}
	if len(held) < 20 {
		t.Fatalf("only %d of the table's versions parse; the test checks nothing", len(held))
	}
	for _, a := range held {
		for _, b := range held {
			if got, want := a.m.Compare(b.m), a.p.ComparePublic(b.p); got != want {
				t.Errorf("Compare(%s, %s) = %d, PEP 440 says %d", a.m, b.m, got, want)
			}
		}
	}
}
