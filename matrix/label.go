package matrix

import (
	"encoding/json"
	"fmt"
	"strings"
)

// StackLabel is the image label that holds a Stack as JSON: the builder
// writes it, validate and images read it.
const StackLabel = "dev.gpuimg.stack"

// LabelValue is s as the value of the StackLabel label: one line of JSON,
// with <, > and & left as they are.
func (s Stack) LabelValue() (string, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	s.SupportedAlternative = nil // advice, not what the image holds
	if err := enc.Encode(s); err != nil {
		return "", fmt.Errorf("encode %s label: %w", StackLabel, err)
	}
	return strings.TrimSpace(b.String()), nil
}

// StackFromLabels reads the StackLabel label from an image's labels. ok is
// false when the image has no such label; err says why a label that is
// there is not a stack.
func StackFromLabels(labels map[string]string) (s Stack, ok bool, err error) {
	raw, ok := labels[StackLabel]
	if !ok || strings.TrimSpace(raw) == "" {
		return Stack{}, false, nil
	}
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return Stack{}, true, fmt.Errorf("label %s is not a stack: %w", StackLabel, err)
	}
	return s, true, nil
}
