package images

import (
	"fmt"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"go.yaml.in/yaml/v3"
)

// Platforms is a list of platforms as --platform and the platforms: keys
// of gpuimg.yaml and publish.yaml give them (linux/amd64,linux/arm64),
// each parsed once by ParsePlatform where it enters. It is a flag value
// (String, Set, Type) and a YAML sequence (UnmarshalYAML); the zero value
// is no platform.
type Platforms []v1.Platform

// Platform is one platform as a single-value --platform flag gives it
// (validate, images copy|export|convert), parsed by ParsePlatform when it
// is set. It is a flag value (String, Set, Type); the zero value is no
// platform, each verb's default.
type Platform struct {
	p *v1.Platform
}

// Set parses s as the platform, replacing one given before.
func (p *Platform) Set(s string) error {
	pl, err := ParsePlatform(s)
	if err != nil {
		return err
	}
	p.p = pl
	return nil
}

// String is the platform as Set reads it; "" for none.
func (p *Platform) String() string {
	if p == nil || p.p == nil {
		return ""
	}
	return p.p.String()
}

// Type is pflag's name for a string, whose syntax Set keeps: help shows
// the value as "string".
func (p *Platform) Type() string { return "string" }

// Get is the platform given, nil for none (WithPlatform's default).
func (p *Platform) Get() *v1.Platform {
	if p == nil {
		return nil
	}
	return p.p
}

// ParsePlatforms parses each of ss with ParsePlatform.
func ParsePlatforms(ss ...string) (Platforms, error) {
	var out Platforms
	for _, s := range ss {
		p, err := ParsePlatform(s)
		if err != nil {
			return nil, err
		}
		out = append(out, *p)
	}
	return out, nil
}

// Strings are the platforms as os/arch[/variant][:osversion], in order:
// what was parsed, written the same way.
func (p Platforms) Strings() []string {
	if len(p) == 0 {
		return nil
	}
	out := make([]string, len(p))
	for i := range p {
		out[i] = p[i].String()
	}
	return out
}

// String is the platforms separated by commas, as Set reads them.
func (p *Platforms) String() string {
	if p == nil {
		return ""
	}
	return strings.Join(p.Strings(), ",")
}

// Set adds the comma-separated platforms of s (nothing for ""), as
// pflag's string slice does with each --platform.
func (p *Platforms) Set(s string) error {
	if s == "" {
		return nil
	}
	more, err := ParsePlatforms(strings.Split(s, ",")...)
	if err != nil {
		return err
	}
	*p = append(*p, more...)
	return nil
}

// Type is pflag's name for a string slice, whose syntax Set keeps: help
// shows the value as "strings".
func (p *Platforms) Type() string { return "stringSlice" }

// UnmarshalYAML implements yaml.Unmarshaler: a sequence of platforms,
// each checked by ParsePlatform; the error names the entry's line.
func (p *Platforms) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.SequenceNode {
		return fmt.Errorf("line %d: platforms must be a list (- linux/amd64)", n.Line)
	}
	out := make(Platforms, 0, len(n.Content))
	for _, item := range n.Content {
		if item.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: a platform is os/arch[/variant] (linux/amd64), not a list or mapping", item.Line)
		}
		pl, err := ParsePlatform(item.Value)
		if err != nil {
			return fmt.Errorf("line %d: %w", item.Line, err)
		}
		out = append(out, *pl)
	}
	*p = out
	return nil
}
