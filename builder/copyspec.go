package builder

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// CopySpec is one of the extras' copies: Src, a path in the context
// directory, to Dst, an absolute path in the image. It is written
// SRC:DST (--copy, copy: of gpuimg.yaml and publish.yaml's build:), and
// ParseCopySpec is the one reader of that form.
type CopySpec struct {
	Src, Dst string
}

// ParseCopySpec parses SRC:DST (split at the first colon) and checks it:
// both sides given, Dst absolute and without "..", Src inside the context
// directory. The errors quote s.
func ParseCopySpec(s string) (CopySpec, error) {
	src, dst, ok := strings.Cut(s, ":")
	if !ok || src == "" || dst == "" {
		return CopySpec{}, fmt.Errorf("copy %q: want SRC:DST", s)
	}
	if !path.IsAbs(dst) {
		return CopySpec{}, fmt.Errorf("copy %q: the destination must be an absolute path in the image", s)
	}
	if slices.Contains(strings.Split(dst, "/"), "..") {
		return CopySpec{}, fmt.Errorf("copy %q: the destination must not contain \"..\"; name the directory it means", s)
	}
	if path.IsAbs(src) || slices.Contains(strings.Split(path.Clean(src), "/"), "..") {
		return CopySpec{}, fmt.Errorf("copy %q: the source must be inside the context directory", s)
	}
	return CopySpec{Src: src, Dst: dst}, nil
}

// String is the copy as SRC:DST.
func (c CopySpec) String() string { return c.Src + ":" + c.Dst }

// CopySpecs parses the extras' copies with ParseCopySpec, in order.
func (e Extras) CopySpecs() ([]CopySpec, error) {
	out := make([]CopySpec, 0, len(e.Copy))
	for _, s := range e.Copy {
		c, err := ParseCopySpec(s)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}
