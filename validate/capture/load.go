package capture

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ReadFile reads a capture file's facts: all of them from capture -o
// json's output, or, from the gpuimg.yaml capture writes, what it pins
// (Facts.Partial: the stack's frameworks, pip's pins, apt's names, env).
// name is the file for messages.
func ReadFile(name string, b []byte) (*Facts, error) {
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		var r Result
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: %w: give a file capture -o json wrote", name, err)
		}
		if r.Facts == nil {
			return nil, fmt.Errorf("%s holds no facts: give a file capture -o json wrote", name)
		}
		return r.Facts, nil
	}
	var s Spec
	if err := yaml.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w: give a gpuimg.yaml capture wrote", name, err)
	}
	if s.Capture.Source == "" {
		return nil, fmt.Errorf("%s has no capture: section: give a gpuimg.yaml capture wrote", name)
	}
	return specFacts(&s), nil
}

// specFacts are what a capture's gpuimg.yaml pins.
func specFacts(s *Spec) *Facts {
	f := &Facts{Partial: true, Python: s.Python, Env: maps.Clone(s.Env), Frameworks: map[string]Framework{}}
	for name, v := range map[string]string{"torch": s.Torch, "tensorflow": s.TensorFlow, "jax": s.JAX} {
		if v != "" {
			f.Frameworks[name] = Framework{Version: v, CUDA: s.CUDA}
		}
	}
	for _, p := range s.Pip {
		name, ver, _ := strings.Cut(p, "==")
		f.Dists = append(f.Dists, Dist{Name: normalize(name), Version: ver})
	}
	for _, a := range s.Apt {
		f.OSPackages = append(f.OSPackages, OSPackage{Name: a, Manual: true})
	}
	return f
}
