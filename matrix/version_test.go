package matrix

import (
	"strings"
	"testing"
)

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		parts   int
		wantErr string
	}{
		{in: "12.2.2", want: "12.2.2", parts: 3},
		{in: "535.104.05", want: "535.104.05", parts: 3},
		{in: "8.9.2.26", want: "8.9.2.26", parts: 4},
		{in: "v2.3", want: "2.3", parts: 2},
		{in: " 3.10 ", want: "3.10", parts: 2},
		{in: "580", want: "580", parts: 1},
		{in: "", wantErr: "empty"},
		{in: "1.2.3.4.5", wantErr: "at most 4"},
		{in: "2.3.1+cu121", want: "2.3.1+cu121", parts: 3},
		{in: "2.5.0rc1", want: "2.5.0rc1", parts: 3},
		{in: "2.5.0.dev20240801+cu124", want: "2.5.0.dev20240801+cu124", parts: 3},
		{in: "8.9.2.26rc1", wantErr: "at most three parts"},
		{in: "1.0.post1", wantErr: "not a number"},
		{in: "2.3.1+", wantErr: "not a number"},
		{in: "rc1", wantErr: "not a number"},
		{in: "2.5.0.dev18446744073709551616", wantErr: "above 2^64-1"},
		{in: "12..2", wantErr: "empty part"},
		{in: "12.x", wantErr: "not a number"},
		{in: "-1", wantErr: "not a number"},
		{in: "1234567890", wantErr: "too long"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			v, err := ParseVersion(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseVersion(%q) error = %v, want it to mention %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseVersion(%q): %v", tt.in, err)
			}
			if v.String() != tt.want || v.Len() != tt.parts {
				t.Errorf("ParseVersion(%q) = %q with %d parts, want %q with %d", tt.in, v, v.Len(), tt.want, tt.parts)
			}
		})
	}
}

func TestVersionCompare(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"12.2", "12.2.0", 0},
		{"535.104.05", "535.104.5", 0},
		{"12.10", "12.9", 1},
		{"9.0", "10.0", -1},
		{"8.9.2.26", "8.9.2", 1},
		{"580", "580.65.06", -1},
		{"2.3.1", "2.3.10", -1},
		// PEP 440 order: dev < a < b < rc < release < a fourth part.
		{"2.5.0.dev1", "2.5.0a1", -1},
		{"2.5.0a1", "2.5.0b1", -1},
		{"2.5.0b1", "2.5.0rc1", -1},
		{"2.5.0rc2", "2.5.0rc10", -1},
		{"2.5.0rc1", "2.5.0", -1},
		{"2.5rc1", "2.5.0rc1", 0},
		{"2.5.0c1", "2.5.0rc1", 0},
		{"2.4.9", "2.5.0.dev1", -1},
		{"2.5.0", "2.5.0.1", -1},
		{"2.3.1+cu121", "2.3.1", 0},
		{"2.3.1+cu121", "2.3.1+cu118", 0},
		// Numbers above 2^32 (issue 43: dev5000000000 once sorted below dev1).
		{"2.5.0.dev5000000000", "2.5.0.dev1", 1},
		{"2.5.0rc5000000000", "2.5.0rc4999999999", 1},
	}
	for _, tt := range tests {
		a, b := MustVersion(tt.a), MustVersion(tt.b)
		if got := a.Compare(b); got != tt.want {
			t.Errorf("Compare(%s, %s) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := b.Compare(a); got != -tt.want {
			t.Errorf("Compare(%s, %s) = %d, want %d", tt.b, tt.a, got, -tt.want)
		}
	}
}

func TestVersionPrefixAndTrunc(t *testing.T) {
	v := MustVersion("12.2.2")
	for p, want := range map[string]bool{"12": true, "12.2": true, "12.2.2": true, "12.20": false, "1": false, "12.2.2.0": true, "12.2.2.1": false} {
		if got := v.HasPrefix(MustVersion(p)); got != want {
			t.Errorf("12.2.2 HasPrefix(%s) = %v, want %v", p, got, want)
		}
	}
	if got := MustVersion("535.104.05").Trunc(2).String(); got != "535.104" {
		t.Errorf("Trunc(2) = %s", got)
	}
	if got := MustVersion("12").Trunc(2).String(); got != "12.0" {
		t.Errorf("Trunc(2) of 12 = %s, want 12.0", got)
	}
	if got := MustVersion("2.5.0rc1+cu124").Trunc(3).String(); got != "2.5.0" {
		t.Errorf("Trunc(3) of 2.5.0rc1+cu124 = %s, want 2.5.0", got)
	}
	if got := MustVersion("8.9.2.26"); got.Part(3) != 26 || got.Trunc(3).String() != "8.9.2" {
		t.Errorf("8.9.2.26: Part(3) = %d, Trunc(3) = %s", got.Part(3), got.Trunc(3))
	}
}
