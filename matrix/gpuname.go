package matrix

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/gpuimg/gpuimg/internal/bound"
)

// ErrUnknownGPU is wrapped by the error of a GPU name that matches no row
// of the GPU table; the error suggests the nearest names.
var ErrUnknownGPU = errors.New("unknown GPU")

// ErrAmbiguousGPU is wrapped by the error of a GPU name that abbreviates
// several rows; the error lists them.
var ErrAmbiguousGPU = errors.New("ambiguous GPU")

// vendorWords are brand words people and NVML put before a model name
// ("NVIDIA GeForce RTX 4090", "Tesla V100-SXM2-16GB"); they never tell
// two rows apart, so matching ignores them.
var vendorWords = []string{"nvidia", "geforce", "tesla", "quadro"}

// gpuWords splits a GPU name into lower-case words at anything that is not
// a letter or digit (spaces, hyphens, underscores), without vendor words.
func gpuWords(s string) []string {
	words := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	return slices.DeleteFunc(words, func(w string) bool { return slices.Contains(vendorWords, w) })
}

// gpuParts splits words further where letters and digits meet ("a100" is
// "a", "100"; "80gb" is "80", "gb") and sorts the parts, so that the same
// words in another order or spacing compare equal.
func gpuParts(words []string) string {
	var parts []string
	for _, w := range words {
		start := 0
		for i := 1; i < len(w); i++ {
			if unicode.IsDigit(rune(w[i])) != unicode.IsDigit(rune(w[i-1])) {
				parts = append(parts, w[start:i])
				start = i
			}
		}
		parts = append(parts, w[start:])
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// gpuKey is one name or alias of a row, normalised.
type gpuKey struct {
	row     int      // index in DB.GPUs
	words   []string // gpuWords
	compact string   // the words joined: "rtx4090"
}

func (db *DB) gpuKeys() []gpuKey {
	var keys []gpuKey
	for i, g := range db.GPUs {
		for _, k := range append([]string{g.Name}, g.Aliases...) {
			w := gpuWords(k)
			if len(w) > 0 {
				keys = append(keys, gpuKey{row: i, words: w, compact: strings.Join(w, "")})
			}
		}
	}
	return keys
}

// LookupGPU finds the row of the GPU table that a name means, as a person
// types it or as nvidia-smi and NVML print it. Case, spaces, hyphens,
// underscores and the vendor words NVIDIA, GeForce, Tesla and Quadro do not
// matter: "RTX 4090", "rtx4090", "4090" and "NVIDIA GeForce RTX 4090" all
// find RTX-4090. The rules, in order, first match wins:
//
//  1. the row's name or an alias ("h100" is H100-SXM because the table
//     gives H100-SXM that alias: a bare model name means the row that
//     carries it as an alias, the table's documented default form);
//  2. the same words in another order ("A100 PCIe 80GB" is a100-80gb-pcie);
//  3. the longest name or alias the given name starts with, word by word,
//     as NVML appends memory and packaging ("H100 80GB HBM3" starts with
//     alias h100-80gb, so H100-SXM; "GH200 480GB" is GH200);
//  4. the given words start exactly one row's name or aliases ("rtx a6000"
//     would, were it not an alias already); several such rows are an
//     error wrapping ErrAmbiguousGPU that lists them.
//
// maxGPUName bounds a name LookupGPU judges: longer is unknown at once,
// without the edit distances of a suggestion (a 1 MiB name took 19 s).
const maxGPUName = 256

// A name that matches nothing is an error wrapping ErrUnknownGPU that
// suggests the nearest names (edit distance). Architectures (sm_90) are
// not rows; FindGPU accepts them too.
func (db *DB) LookupGPU(name string) (GPU, error) {
	words := gpuWords(name)
	if len(words) == 0 || len(name) > maxGPUName {
		return GPU{}, db.unknownGPU(name, "")
	}
	compact := strings.Join(words, "")
	keys := db.gpuKeys()
	for _, k := range keys { // 1
		if k.compact == compact {
			return db.GPUs[k.row], nil
		}
	}
	parts := gpuParts(words)
	for _, k := range keys { // 2
		if gpuParts(k.words) == parts {
			return db.GPUs[k.row], nil
		}
	}
	for n := len(words) - 1; n > 0; n-- { // 3
		prefix := strings.Join(words[:n], "")
		for _, k := range keys {
			if k.compact == prefix {
				return db.GPUs[k.row], nil
			}
		}
	}
	var rows []int // 4
	for _, k := range keys {
		for n := 1; n < len(k.words); n++ {
			if strings.Join(k.words[:n], "") == compact && !slices.Contains(rows, k.row) {
				rows = append(rows, k.row)
			}
		}
	}
	switch len(rows) {
	case 0:
		return GPU{}, db.unknownGPU(name, compact)
	case 1:
		return db.GPUs[rows[0]], nil
	}
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = db.GPUs[r].Name
	}
	return GPU{}, fmt.Errorf("%w %s: it could be %s; give one of these names", ErrAmbiguousGPU, bound.Quote(name), strings.Join(names, ", "))
}

// unknownGPU is the error for a name no row matches, with the rows whose
// names or aliases are nearest to compact (the normalised name): by edit
// distance, or sharing its first characters (a prefix), each with its
// architecture, and how to judge by architecture instead (--gpu sm_XY).
func (db *DB) unknownGPU(name, compact string) error {
	near := db.nearGPUs(compact)
	if len(near) > 0 {
		names := make([]string, len(near))
		for i, r := range near {
			names[i] = db.GPUs[r].Name + " (" + db.GPUs[r].Arch + ")"
		}
		return fmt.Errorf("%w %s: did you mean %s? Give a name or alias from gpuimg matrix list gpus, or judge by architecture: --gpu %s if it is a %s (gpuimg matrix list archs)",
			ErrUnknownGPU, bound.Quote(name), strings.Join(names, ", "), db.GPUs[near[0]].Arch, db.GPUs[near[0]].Name)
	}
	var names []string
	for _, g := range db.GPUs {
		names = append(names, g.Name)
	}
	return fmt.Errorf("%w %s: give a name (%s), or judge by architecture: --gpu sm_XY (sm_90, sm_120; gpuimg matrix list archs); see gpuimg matrix list gpus", ErrUnknownGPU, bound.Quote(name), strings.Join(names, ", "))
}

// nearGPUs are up to three rows whose names or aliases are near compact,
// nearest first: an edit distance of at most a third of the name (at
// least 2 edits), or one starting with the other, 4 characters at least
// ("rtx5090foundersedition" and rtx5090), counted as 1.
func (db *DB) nearGPUs(compact string) []int {
	if compact == "" {
		return nil
	}
	limit := max(2, len(compact)/3)
	best := map[int]int{} // row → smallest distance of its keys
	for _, k := range db.gpuKeys() {
		d := editDistance(compact, k.compact)
		if p := commonPrefix(compact, k.compact); p >= 4 && p == min(len(compact), len(k.compact)) {
			d = min(d, 1)
		}
		if old, ok := best[k.row]; !ok || d < old {
			best[k.row] = d
		}
	}
	var near []int
	for r, d := range best {
		if d <= limit {
			near = append(near, r)
		}
	}
	slices.SortFunc(near, func(a, b int) int {
		if best[a] != best[b] {
			return best[a] - best[b]
		}
		return a - b
	})
	return near[:min(len(near), 3)]
}

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
