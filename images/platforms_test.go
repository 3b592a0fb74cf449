package images

import (
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestPlatformsSet reads --platform values as pflag's string slice does:
// comma-separated, each flag adding to the last, "" adding nothing, and
// every platform through ParsePlatform.
func TestPlatformsSet(t *testing.T) {
	for _, tt := range []struct {
		sets    []string
		want    []string
		wantErr string
	}{
		{sets: nil, want: nil},
		{sets: []string{""}, want: nil},
		{sets: []string{"linux/amd64"}, want: []string{"linux/amd64"}},
		{sets: []string{"linux/amd64,linux/arm64/v8"}, want: []string{"linux/amd64", "linux/arm64/v8"}},
		{sets: []string{"linux/amd64", "linux/arm64"}, want: []string{"linux/amd64", "linux/arm64"}},
		{sets: []string{"windows/amd64:10.0.17763"}, want: []string{"windows/amd64:10.0.17763"}},
		{sets: []string{"linux/"}, wantErr: `platform "linux/" is not os/arch[/variant]`},
		{sets: []string{"amd64"}, wantErr: `platform "amd64" is not os/arch[/variant]`},
		{sets: []string{"linux/amd64, linux/arm64"}, wantErr: `platform " linux/arm64" is not`},
		{sets: []string{"linux/amd64,"}, wantErr: `platform "" is not`},
		{sets: []string{"linux/arm64/v8/x"}, wantErr: "is not os/arch[/variant]"},
	} {
		t.Run(strings.Join(tt.sets, " "), func(t *testing.T) {
			var p Platforms
			var err error
			for _, s := range tt.sets {
				if err = p.Set(s); err != nil {
					break
				}
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Set(%q): error %v, want %q", tt.sets, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.Strings(), tt.want) {
				t.Errorf("Set(%q) = %q, want %q", tt.sets, p.Strings(), tt.want)
			}
			if got, want := p.String(), strings.Join(tt.want, ","); got != want {
				t.Errorf("String() = %q, want %q", got, want)
			}
		})
	}
	if got := (&Platforms{}).Type(); got != "stringSlice" {
		t.Errorf("Type() = %q: help would no longer show --platform strings", got)
	}
}

// TestPlatformsYAML reads a platforms: list, each entry through
// ParsePlatform, the error naming the entry's line.
func TestPlatformsYAML(t *testing.T) {
	for _, tt := range []struct {
		doc     string
		want    []string
		wantErr string
	}{
		{doc: "platforms: [linux/amd64, linux/arm64]", want: []string{"linux/amd64", "linux/arm64"}},
		{doc: "platforms:\n  - linux/arm64/v8\n", want: []string{"linux/arm64/v8"}},
		{doc: "platforms:\n", want: nil},
		{doc: "platforms:\n  - linux/amd64\n  - amd64\n", wantErr: `line 3: platform "amd64" is not os/arch[/variant]`},
		{doc: "platforms: linux/amd64", wantErr: "line 1: platforms must be a list"},
		{doc: "platforms:\n  - {os: linux}\n", wantErr: "line 2: a platform is os/arch[/variant]"},
	} {
		t.Run(tt.doc, func(t *testing.T) {
			var v struct {
				Platforms Platforms `yaml:"platforms"`
			}
			err := yaml.Unmarshal([]byte(tt.doc), &v)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(v.Platforms.Strings(), tt.want) {
				t.Errorf("got %q, want %q", v.Platforms.Strings(), tt.want)
			}
		})
	}
}

// TestPlatformSet reads a single-value --platform through ParsePlatform:
// the last value wins, the zero value is none, a bad value is refused and
// keeps the one before.
func TestPlatformSet(t *testing.T) {
	var p Platform
	if p.Get() != nil || p.String() != "" {
		t.Errorf("zero value: %v, %q; want none", p.Get(), p.String())
	}
	for _, s := range []string{"linux/amd64", "linux/arm64/v8"} {
		if err := p.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.Get(); got == nil || got.Architecture != "arm64" || got.Variant != "v8" || p.String() != "linux/arm64/v8" {
		t.Errorf("after two values: %v, %q; want the last, linux/arm64/v8", got, p.String())
	}
	if err := p.Set("linux/"); err == nil || !strings.Contains(err.Error(), `platform "linux/" is not os/arch[/variant]`) {
		t.Errorf("Set(linux/): %v", err)
	}
	if p.String() != "linux/arm64/v8" {
		t.Errorf("a refused value replaced the platform: %q", p.String())
	}
	if got := p.Type(); got != "string" {
		t.Errorf("Type() = %q: help would no longer show --platform string", got)
	}
}
