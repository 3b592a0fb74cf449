package builder

import (
	"strings"
	"testing"
)

// TestProvenanceOpt: what each setting asks BuildKit for, and which
// builder ids are refused (BuildKit reads the attribute as CSV).
func TestProvenanceOpt(t *testing.T) {
	tests := []struct {
		setting, addr, want string
	}{
		{"", "tcp://b:1234", ""},
		{"false", "", ""},
		{ProvenanceAuto, "tcp://b:1234", "mode=max,version=v1,builder-id=https://github.com/gpuimg/gpuimg/cmd/gpuimg?buildkitd=tcp%3A%2F%2Fb%3A1234"},
		{"true", "", "mode=max,version=v1,builder-id=https://github.com/gpuimg/gpuimg/cmd/gpuimg?buildkitd=local"},
		{"https://ci.example.com/runner/7", "", "mode=max,version=v1,builder-id=https://ci.example.com/runner/7"},
	}
	for _, tt := range tests {
		if err := CheckProvenance(tt.setting); err != nil {
			t.Errorf("CheckProvenance(%q) = %v", tt.setting, err)
		}
		if got := provenanceOpt(tt.setting, tt.addr); got != tt.want {
			t.Errorf("provenanceOpt(%q, %q) = %q, want %q", tt.setting, tt.addr, got, tt.want)
		}
	}
	for _, bad := range []string{"https://a,mode=min", "runner 7", "no-scheme", `https://x"y`} {
		if err := CheckProvenance(bad); err == nil {
			t.Errorf("CheckProvenance(%q) = nil, want an error", bad)
		}
	}
}

// TestMergeProvenance: gpuimg.yaml's provenance: applies unless the
// command line gives one; a bad one names its source.
func TestMergeProvenance(t *testing.T) {
	file := &Config{Path: "/src/gpuimg.yaml", Provenance: "https://ci.example.com/r"}
	s, err := Merge(Flags{}, Env{}, file)
	if err != nil {
		t.Fatal(err)
	}
	if s.Request.Provenance != "https://ci.example.com/r" || s.Sources["provenance"] != FromFile {
		t.Errorf("from file: %q (%s)", s.Request.Provenance, s.Sources["provenance"])
	}
	s, err = Merge(Flags{Provenance: ProvenanceAuto, Given: given("provenance")}, Env{}, file)
	if err != nil {
		t.Fatal(err)
	}
	if s.Request.Provenance != ProvenanceAuto || s.Sources["provenance"] != FromFlag {
		t.Errorf("from flag: %q (%s)", s.Request.Provenance, s.Sources["provenance"])
	}
	_, err = Merge(Flags{}, Env{}, &Config{Path: "/src/gpuimg.yaml", Provenance: "a b"})
	if err == nil || !strings.Contains(err.Error(), "set by gpuimg.yaml") {
		t.Errorf("bad provenance in file: err = %v", err)
	}
}
