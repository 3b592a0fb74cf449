package humanize

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode/utf8"
)

// Ellipsis marks where a cell was shortened to fit the terminal.
const Ellipsis = "…"

// Fit is how a column gives up width when a table is wider than its
// terminal.
type Fit int

const (
	// CutEnd keeps the start of a cell: "NVIDIA GeForce RTX…".
	CutEnd Fit = iota
	// CutMiddle keeps both ends, for paths whose file name matters:
	// "/usr/lib/python3…/torch/lib/libtorch_cuda.so".
	CutMiddle
	// Wrap breaks a cell into several lines at spaces, the lines after
	// the first under the cell's own column; only the last column wraps.
	Wrap
)

// minCell is the narrowest a column is shortened to.
const minCell = 8

// padding is the space between columns, as every gpuimg table has it.
const padding = 2

// Table writes aligned columns (text/tabwriter, two spaces between
// columns) shortened to a width. Width 0 is unlimited: the output is
// exactly tabwriter's, byte for byte, and so is a table that fits.
type Table struct {
	w      io.Writer
	width  int
	rows   [][]string
	shrink []int
	drop   []int
	fit    map[int]Fit
}

// NewTable returns a table written to w on Flush, fitted to width
// columns of text (0: unlimited).
func NewTable(w io.Writer, width int) *Table {
	return &Table{w: w, width: max(width, 0), fit: map[int]Fit{}}
}

// Shrink names the columns (0-based; -1 is the last) that give up width
// first, in that order, down to a few runes each (free text such as
// notes and sources); when they are not enough, the widest of the others
// give up width in turn. It returns t.
func (t *Table) Shrink(cols ...int) *Table {
	t.shrink = append(t.shrink, cols...)
	return t
}

// Drop names the columns (0-based; -1 is the last) left out, in that
// order, while the table is too wide to fit by shortening cells to a
// readable width (details a person can ask for with --wide). A line
// under the table names what was left out. It returns t.
func (t *Table) Drop(cols ...int) *Table {
	t.drop = append(t.drop, cols...)
	return t
}

// Fit sets how column col is shortened (CutEnd by default). It returns t.
func (t *Table) Fit(col int, f Fit) *Table {
	t.fit[col] = f
	return t
}

// Row adds a row; no arguments is an empty line.
func (t *Table) Row(cols ...string) { t.rows = append(t.rows, cols) }

// Flush writes the table.
func (t *Table) Flush() error {
	defer func() { t.rows = nil }()
	tw := tabwriter.NewWriter(t.w, 0, 4, padding, ' ', 0)
	w := t.widths()
	hidden := t.leaveOut(w)
	rows := t.rows
	switch caps := t.caps(w, hidden); {
	case caps != nil:
		rows = t.cut(caps, hidden)
	case len(hidden) > 0: // leaving columns out was enough
		rows = t.cut(w, hidden)
	}
	for _, r := range rows {
		if _, err := fmt.Fprintln(tw, strings.Join(r, "\t")); err != nil {
			return err
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(hidden) == 0 || len(t.rows) == 0 {
		return nil
	}
	var names []string
	for _, c := range hidden {
		if c < len(t.rows[0]) {
			names = append(names, t.rows[0][c])
		}
	}
	note := fmt.Sprintf("(left out to fit %d columns: %s; --wide shows them)", t.width, strings.Join(names, ", "))
	for _, line := range WrapText(note, t.width) {
		if _, err := fmt.Fprintln(t.w, line); err != nil {
			return err
		}
	}
	return nil
}

// widths are the widest cell of each column, in runes.
func (t *Table) widths() []int {
	var w []int
	for _, r := range t.rows {
		for i, c := range r {
			if i == len(w) {
				w = append(w, 0)
			}
			w[i] = max(w[i], utf8.RuneCountInString(c))
		}
	}
	return w
}

// excess is how much wider than the terminal the columns of widths w
// are, hidden ones left out.
func (t *Table) excess(w []int, hidden []int) int {
	total := -padding
	for c, n := range w {
		if !slices.Contains(hidden, c) {
			total += n + padding
		}
	}
	return total - t.width
}

// readable is the width down to which columns shorten before Drop's
// columns are left out instead.
const readable = 12

// leaveOut is the Drop columns left out: one more while shortening the
// other columns (not the first) to a readable width would not make the
// table fit.
func (t *Table) leaveOut(w []int) []int {
	var hidden []int
	if t.width == 0 {
		return nil
	}
	for _, c := range index(t.drop, len(w)) {
		slack := 0
		for i, n := range w {
			if i > 0 && n > readable && !slices.Contains(hidden, i) {
				slack += n - readable
			}
		}
		if c == 0 || t.excess(w, hidden) <= slack {
			break
		}
		hidden = append(hidden, c)
	}
	return hidden
}

// caps are the widths the columns are cut to, or nil when the table fits
// as it is.
func (t *Table) caps(w []int, hidden []int) []int {
	if t.width == 0 || len(w) == 0 {
		return nil
	}
	excess := t.excess(w, hidden)
	if excess <= 0 {
		return nil
	}
	caps := slices.Clone(w)
	named := index(t.shrink, len(w))
	for _, c := range named {
		give := min(excess, caps[c]-minCell)
		if give > 0 && !slices.Contains(hidden, c) {
			caps[c] -= give
			excess -= give
		}
	}
	// Then the widest of the others, a rune at a time, so that they end
	// up about as wide as each other; the first column (the row's name)
	// only when nothing else is left, unless it is a path (CutMiddle).
	first := t.fit[0] == CutMiddle
	for ; excess > 0; excess-- {
		widest := -1
		for c := range caps {
			if slices.Contains(named, c) || slices.Contains(hidden, c) || caps[c] <= minCell {
				continue
			}
			if widest < 0 || (widest == 0 && !first) || caps[c] > caps[widest] {
				widest = c
			}
		}
		if widest < 0 {
			break
		}
		caps[widest]--
	}
	return caps
}

// index turns cols (negative: from the end) into columns of a table of n
// columns, each once.
func index(cols []int, n int) []int {
	var out []int
	for _, c := range cols {
		if c < 0 {
			c += n
		}
		if c >= 0 && c < n && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// cut shortens every cell to its column's cap and leaves out the hidden
// columns; a wrapped last column adds continuation rows.
func (t *Table) cut(caps []int, hidden []int) [][]string {
	var out [][]string
	for _, r := range t.rows {
		var row, more []string
		for i, c := range r {
			switch {
			case slices.Contains(hidden, i):
			case t.fit[i] == Wrap && i == len(r)-1:
				lines := wrap(c, caps[i])
				row, more = append(row, lines[0]), lines[1:]
			default:
				row = append(row, shorten(c, caps[i], t.fit[i]))
			}
		}
		out = append(out, row)
		for _, m := range more {
			cont := make([]string, len(row))
			cont[len(row)-1] = m
			out = append(out, cont)
		}
	}
	return out
}

// shorten cuts s to n runes, marking the cut with Ellipsis.
func shorten(s string, n int, f Fit) string {
	rs := []rune(s)
	if len(rs) <= n {
		return s
	}
	if n <= 1 {
		return Ellipsis
	}
	if f == CutMiddle {
		head := (n - 1) / 3
		return string(rs[:head]) + Ellipsis + string(rs[len(rs)-(n-1-head):])
	}
	return strings.TrimRight(string(rs[:n-1]), " ") + Ellipsis
}

// wrap breaks s into lines of at most n runes at spaces; a word longer
// than n is cut with Ellipsis.
func wrap(s string, n int) []string {
	lines := WrapText(s, n)
	for i, l := range lines {
		lines[i] = shorten(l, n, CutEnd)
	}
	return lines
}

// WrapText breaks s into lines of at most width runes at spaces, for prose
// under a table (width 0: one line). A word longer than width stays
// whole.
func WrapText(s string, width int) []string {
	if width <= 0 {
		return []string{s}
	}
	var lines []string
	line := ""
	for word := range strings.FieldsSeq(s) {
		switch {
		case line == "":
			line = word
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	return append(lines, line)
}
