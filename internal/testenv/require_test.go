package testenv

import "testing"

func TestSkipReason(t *testing.T) {
	both := []Need{Slow, Root}
	for _, tt := range []struct {
		name        string
		short, root bool
		needs       []Need
		want        string
	}{
		{"unit test under -short, not root", true, false, nil, ""},
		{"slow and root, full run as root", false, true, both, ""},
		{"slow, under -short", true, true, both, "-short: starts buildkitd (run without -short)"},
		{"root, full run as a user", false, false, both, "needs root: starts buildkitd"},
		{"the first missing need in the order given", true, false, []Need{Root, Slow}, "needs root: starts buildkitd"},
		{"slow only, as a user", false, false, []Need{Slow}, ""},
		{"root only, under -short as root", true, true, []Need{Root}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := skipReason(tt.short, tt.root, "starts buildkitd", tt.needs); got != tt.want {
				t.Errorf("skipReason(short=%v, root=%v, %v) = %q, want %q", tt.short, tt.root, tt.needs, got, tt.want)
			}
		})
	}
}
