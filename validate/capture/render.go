package capture

import (
	"bytes"
	"encoding/json"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// SchemaURL names docs/schemas/capture.schema.json, the JSON output's schema.
const SchemaURL = "https://github.com/gpuimg/gpuimg/blob/main/docs/schemas/capture.schema.json"

// YAML writes the spec as gpuimg.yaml, with a comment that says what it
// is and how to build it.
func (s *Spec) YAML() ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# gpuimg capture of %s, %s\n", s.Capture.Source, s.Capture.Date)
	build := "gpuimg build -f THIS_FILE"
	if len(s.Copy) > 0 {
		build += " --context THIS_FILE'S_DIRECTORY" // copy: is relative to it
	}
	fmt.Fprintf(&b, "# Build it: %s -t REF; prove it: gpuimg diff %s REF\n", build, s.Capture.Source)
	if n := len(s.Capture.Unreproducible); n > 0 {
		fmt.Fprintf(&b, "# %d item(s) cannot be reproduced from this file: see capture.unreproducible\n", n)
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(s); err != nil {
		return nil, fmt.Errorf("write capture as YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("write capture as YAML: %w", err)
	}
	return b.Bytes(), nil
}

// JSON writes the result with its schema.
func (r *Result) JSON() ([]byte, error) {
	out := struct {
		Schema string `json:"$schema"`
		*Result
	}{SchemaURL, r}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("write capture as JSON: %w", err)
	}
	return append(b, '\n'), nil
}
