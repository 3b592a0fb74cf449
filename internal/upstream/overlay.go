package upstream

import (
	"bytes"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpuimg/gpuimg/matrix"
)

// Overlay is what upstream publishes and the matrix lacks.
type Overlay struct {
	// Date is the day the sources were read (YYYY-MM-DD), recorded as
	// every new source's retrieved date.
	Date string
	// File holds the new rows and their sources in matrix-file form.
	File matrix.File
	// Found lists, one entry per row, what upstream has that the matrix
	// lacks. It is empty when the matrix is up to date.
	Found []Finding
	// Unfilled lists facts of new rows that no machine-readable source
	// gives; they stay hand-kept (docs/matrix-data.md).
	Unfilled []Unfilled
	// Incomplete lists rows a required field of which could not be read:
	// they are written commented out, with the reason, and are also in
	// Found.
	Incomplete []Incomplete
}

// Finding is one thing upstream has that the matrix lacks.
type Finding struct {
	Source Source
	What   string // "torch 2.15.0 (cu126, cu130)"
	URL    string // where it was read
}

func (f Finding) String() string { return fmt.Sprintf("%s: %s (%s)", f.Source, f.What, f.URL) }

// Unfilled is a fact of a new row the updater could not fill.
type Unfilled struct {
	Source Source
	Row    string // "torch 2.15.0 cu126"
	Field  string // "status"
	Reason string
}

func (u Unfilled) String() string { return fmt.Sprintf("%s %s: %s", u.Row, u.Field, u.Reason) }

// Incomplete is a row left commented out because a field the format
// requires could not be read.
type Incomplete struct {
	Source Source
	Row    string
	Reason string
	// File holds the partial row alone.
	File matrix.File
}

// Empty reports whether upstream has nothing the matrix lacks.
func (o *Overlay) Empty() bool { return len(o.Found) == 0 }

// Marshal renders the overlay as a --matrix-file: a header comment with
// what could not be filled, the new rows, and incomplete rows commented
// out. The result always parses with matrix.ParseFile.
func (o *Overlay) Marshal() ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Matrix overlay written by `gpuimg matrix update` from upstream's machine-readable\n")
	fmt.Fprintf(&b, "# sources, read %s. Use it with --matrix-file (docs/matrix-data.md).\n", o.Date)
	if o.Empty() {
		b.WriteString("# The matrix already has everything these sources publish.\n")
	}
	if len(o.Unfilled) > 0 {
		b.WriteString("#\n# Could not fill (no machine-readable source gives these; keep them by hand, with a source):\n")
		for _, u := range o.Unfilled {
			writeComment(&b, "  - "+u.String())
		}
	}
	body, err := marshalFile(&o.File)
	if err != nil {
		return nil, err
	}
	if len(body) > 0 {
		b.WriteString("\n")
		b.Write(body)
	}
	for _, inc := range o.Incomplete {
		rb, err := marshalFile(&inc.File)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "\n# %s is left out: %s\n", inc.Row, inc.Reason)
		for l := range strings.SplitSeq(strings.TrimRight(string(rb), "\n"), "\n") {
			b.WriteString("# " + l + "\n")
		}
	}
	out := b.Bytes()
	if _, err := matrix.ParseFile("overlay", out); err != nil {
		return nil, fmt.Errorf("render matrix overlay (a gpuimg bug): %w", err)
	}
	return out, nil
}

func writeComment(b *bytes.Buffer, s string) {
	for l := range strings.SplitSeq(s, "\n") {
		b.WriteString("#" + strings.TrimRight(" "+l, " ") + "\n")
	}
}

// marshalFile renders f without the empty fields matrix.File's YAML tags
// would otherwise write ("released: ”", "notes: []"), lists of scalars
// in flow style as the built-in files write them.
func marshalFile(f *matrix.File) ([]byte, error) {
	var n yaml.Node
	if err := n.Encode(f); err != nil {
		return nil, fmt.Errorf("render matrix overlay: %w", err)
	}
	prune(&n)
	root := &n
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		root = n.Content[0]
	}
	if len(root.Content) == 0 {
		return nil, nil
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return nil, fmt.Errorf("render matrix overlay: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("render matrix overlay: %w", err)
	}
	return b.Bytes(), nil
}

// prune drops mapping entries whose value is empty: "", false, null, an
// empty list or mapping.
func prune(n *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode:
		var kept []*yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			v := n.Content[i+1]
			prune(v)
			if emptyNode(v) {
				continue
			}
			kept = append(kept, n.Content[i], v)
		}
		n.Content = kept
	case yaml.SequenceNode:
		scalars := len(n.Content) > 0
		for _, c := range n.Content {
			prune(c)
			scalars = scalars && c.Kind == yaml.ScalarNode && !strings.ContainsAny(c.Value, " \n")
		}
		if scalars {
			n.Style = yaml.FlowStyle
		}
	case yaml.DocumentNode:
		for _, c := range n.Content {
			prune(c)
		}
	}
}

func emptyNode(v *yaml.Node) bool {
	switch v.Kind {
	case yaml.ScalarNode:
		return v.Value == "" || v.Tag == "!!null" || (v.Tag == "!!bool" && v.Value == "false")
	case yaml.SequenceNode, yaml.MappingNode:
		return len(v.Content) == 0
	}
	return false
}
