package upstream

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/gpuimg/gpuimg/matrix"
)

// dataFiles names the files of matrix/data/ that Fold may change, by the
// top-level key whose rows the updater writes.
var dataFiles = map[string]string{
	"torch":       "torch.yaml",
	"tensorflow":  "tensorflow.yaml",
	"jax":         "jax.yaml",
	"cuda":        "cuda.yaml",
	"cudnn":       "cudnn.yaml",
	"nccl":        "nccl.yaml",
	"base_images": "images.yaml",
}

// DataFiles lists the files of matrix/data/ Fold reads and may change
// (torch.yaml, …, images.yaml), sorted.
func DataFiles() []string {
	return slices.Sorted(maps.Values(dataFiles))
}

// Fold writes the overlay's rows into the text of matrix data files
// (file name → content, as in matrix/data/) and returns the files it
// changed. It edits text, so the rest of each file (comments, quoting,
// order) stays as it is: new rows go at the end of their list, or at its
// start when the list is newest first; a row of the overlay that extends
// a row of the file (a torch release with new variants) replaces that
// row's lines; each new row's source goes at the end of the file's
// sources list. Incomplete rows are not written. Fold does no I/O.
func Fold(files map[string][]byte, ov *Overlay) (map[string][]byte, error) {
	srcByID := map[string]matrix.Source{}
	for _, s := range ov.File.Sources {
		srcByID[s.ID] = s
	}
	placed := map[string]bool{}
	out := map[string][]byte{}
	kinds := []struct {
		key   string
		rows  matrix.File
		n     int
		idKey string
		idOf  func(i int) string
	}{
		{key: "torch", rows: matrix.File{Torch: ov.File.Torch}, n: len(ov.File.Torch), idKey: "version",
			idOf: func(i int) string { return ov.File.Torch[i].Version.String() }},
		{key: "tensorflow", rows: matrix.File{TensorFlow: ov.File.TensorFlow}, n: len(ov.File.TensorFlow), idKey: "version",
			idOf: func(i int) string { return ov.File.TensorFlow[i].Version.String() }},
		{key: "jax", rows: matrix.File{JAX: ov.File.JAX}, n: len(ov.File.JAX), idKey: "version",
			idOf: func(i int) string { return ov.File.JAX[i].Version.String() }},
		{key: "cuda", rows: matrix.File{CUDA: ov.File.CUDA}, n: len(ov.File.CUDA), idKey: "version",
			idOf: func(i int) string { return ov.File.CUDA[i].Version.String() }},
		{key: "cudnn", rows: matrix.File{CuDNN: ov.File.CuDNN}, n: len(ov.File.CuDNN), idKey: "version",
			idOf: func(i int) string { return ov.File.CuDNN[i].Version.String() }},
		{key: "nccl", rows: matrix.File{NCCL: ov.File.NCCL}, n: len(ov.File.NCCL), idKey: "version",
			idOf: func(i int) string { return ov.File.NCCL[i].Version.String() }},
		{key: "base_images", rows: matrix.File{BaseImages: ov.File.BaseImages}, n: len(ov.File.BaseImages), idKey: "cuda",
			idOf: func(i int) string { return ov.File.BaseImages[i].CUDA.String() }},
	}
	for _, k := range kinds {
		if k.n == 0 {
			continue
		}
		name := dataFiles[k.key]
		text, ok := files[name]
		if !ok {
			return nil, fmt.Errorf("fold %s rows: no %s among the data files", k.key, name)
		}
		if b, ok := out[name]; ok {
			text = b
		}
		rows, err := renderItems(&k.rows)
		if err != nil {
			return nil, err
		}
		lines := splitLines(string(text))
		blk, err := findBlock(name, lines, k.key)
		if err != nil {
			return nil, err
		}
		var sources []matrix.Source
		var fresh []item
		for i, r := range rows {
			id := k.idOf(i)
			if s, ok := srcByID[r.source]; ok && !placed[r.source] {
				sources = append(sources, s)
				placed[r.source] = true
			}
			// A base_images CUDA may hold several rows; the overlay only
			// writes CUDA releases with none, so a match is an extension
			// only for the other kinds.
			if k.key != "base_images" {
				if at, end, ok := blk.find(lines, k.idKey, id); ok {
					lines = slices.Concat(lines[:at], r.indent(blk.indent), lines[end:])
					if blk, err = findBlock(name, lines, k.key); err != nil {
						return nil, err
					}
					continue
				}
			}
			fresh = append(fresh, r)
		}
		if len(fresh) > 0 {
			var ins []string
			at := blk.end
			if blk.newestFirst(lines, k.idKey) {
				at = blk.start
				for _, r := range slices.Backward(fresh) {
					ins = append(ins, r.indent(blk.indent)...)
				}
			} else {
				for _, r := range fresh {
					ins = append(ins, r.indent(blk.indent)...)
				}
			}
			lines = slices.Concat(lines[:at], ins, lines[at:])
		}
		if len(sources) > 0 {
			srcItems, err := renderItems(&matrix.File{Sources: sources})
			if err != nil {
				return nil, err
			}
			sb, err := findBlock(name, lines, "sources")
			if err != nil {
				return nil, err
			}
			var ins []string
			for _, s := range srcItems {
				ins = append(ins, s.indent(sb.indent)...)
			}
			lines = slices.Concat(lines[:sb.end], ins, lines[sb.end:])
		}
		b := []byte(strings.Join(lines, ""))
		if _, err := matrix.ParseFile(name, b); err != nil {
			return nil, fmt.Errorf("fold the overlay into %s (a gpuimg bug): %w", name, err)
		}
		out[name] = b
	}
	return out, nil
}

// item is one rendered list item: its lines (each ending in "\n") at
// indent 0 ("- version: …", "  python: …").
type item struct {
	lines  []string
	source string
}

func (it item) indent(n int) []string {
	pad := strings.Repeat(" ", n)
	out := make([]string, len(it.lines))
	for i, l := range it.lines {
		if l == "\n" {
			out[i] = l
			continue
		}
		out[i] = pad + l
	}
	return out
}

var sourceLineRE = regexp.MustCompile(`^  source: (.+)\n$`)

// renderItems renders f's one non-empty list as items at indent 0.
func renderItems(f *matrix.File) ([]item, error) {
	b, err := marshalFile(f)
	if err != nil {
		return nil, err
	}
	lines := splitLines(string(b))
	if len(lines) < 2 {
		return nil, fmt.Errorf("render rows: nothing rendered")
	}
	body := lines[1:] // without "key:"
	base := len(body[0]) - len(strings.TrimLeft(body[0], " "))
	var items []item
	for _, l := range body {
		if len(l) > base {
			l = l[base:]
		}
		if strings.HasPrefix(l, "- ") {
			items = append(items, item{})
		}
		if len(items) == 0 {
			return nil, fmt.Errorf("render rows: unexpected line %q", l)
		}
		it := &items[len(items)-1]
		it.lines = append(it.lines, l)
		if m := sourceLineRE.FindStringSubmatch(l); m != nil {
			it.source = strings.Trim(m[1], `"'`)
		}
	}
	return items, nil
}

func splitLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > 0 && !strings.HasSuffix(lines[len(lines)-1], "\n") {
		lines[len(lines)-1] += "\n"
	}
	return lines
}

// block is a top-level list in a data file: its items are lines
// [start, end) (end excludes trailing blank and column-0 comment lines,
// which belong to what follows), at indent.
type block struct {
	start, end, indent int
}

var topKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*:`)

func findBlock(name string, lines []string, key string) (block, error) {
	at := -1
	for i, l := range lines {
		if rest, ok := strings.CutPrefix(l, key+":"); ok {
			if strings.TrimSpace(rest) != "" {
				return block{}, fmt.Errorf("fold into %s: %q is not a block list; write it as a list of rows", name, strings.TrimSpace(l))
			}
			at = i
			break
		}
	}
	if at < 0 {
		return block{}, fmt.Errorf("fold into %s: no top-level %q list", name, key)
	}
	end := len(lines)
	for i := at + 1; i < len(lines); i++ {
		if topKeyRE.MatchString(lines[i]) {
			end = i
			break
		}
	}
	for end > at+1 {
		l := lines[end-1]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			end--
			continue
		}
		break
	}
	b := block{start: at + 1, end: end, indent: -1}
	for i := b.start; i < b.end; i++ {
		t := strings.TrimLeft(lines[i], " ")
		if strings.HasPrefix(t, "- ") {
			b.indent = len(lines[i]) - len(t)
			break
		}
	}
	if b.indent < 0 {
		b.indent = 2 // an empty list: the files' usual indent
	}
	return b, nil
}

// items returns the first line of each item of b.
func (b block) items(lines []string) []int {
	var out []int
	prefix := strings.Repeat(" ", b.indent) + "- "
	for i := b.start; i < b.end; i++ {
		if strings.HasPrefix(lines[i], prefix) {
			out = append(out, i)
		}
	}
	return out
}

// value reads "- KEY: VALUE" (quoted or not) from an item's first line.
func (b block) value(line, key string) string {
	t := strings.TrimSpace(strings.TrimPrefix(strings.TrimLeft(line, " "), "- "))
	v, ok := strings.CutPrefix(t, key+":")
	if !ok {
		return ""
	}
	v, _, _ = strings.Cut(v, " #")
	return strings.Trim(strings.TrimSpace(v), `"'`)
}

// find returns the lines [at, end) of the item whose key is id, without
// its trailing blank and comment lines.
func (b block) find(lines []string, key, id string) (int, int, bool) {
	starts := b.items(lines)
	for n, at := range starts {
		if b.value(lines[at], key) != id {
			continue
		}
		end := b.end
		if n+1 < len(starts) {
			end = starts[n+1]
		}
		for end > at+1 {
			t := strings.TrimSpace(lines[end-1])
			if t == "" || strings.HasPrefix(t, "#") {
				end--
				continue
			}
			break
		}
		return at, end, true
	}
	return 0, 0, false
}

// newestFirst says whether the list's first item is newer than its last.
func (b block) newestFirst(lines []string, key string) bool {
	starts := b.items(lines)
	if len(starts) < 2 {
		return false
	}
	first, err1 := matrix.ParseVersion(b.value(lines[starts[0]], key))
	last, err2 := matrix.ParseVersion(b.value(lines[starts[len(starts)-1]], key))
	return err1 == nil && err2 == nil && last.Less(first)
}
