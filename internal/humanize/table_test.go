package humanize

import (
	"bytes"
	"strings"
	"testing"
	"text/tabwriter"
	"unicode/utf8"
)

// tabwriterOut is what the table wrote before it fitted a terminal.
func tabwriterOut(rows [][]string) string {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		_, _ = tw.Write([]byte(strings.Join(r, "\t") + "\n"))
	}
	_ = tw.Flush()
	return b.String()
}

func tableOut(rows [][]string, width int, setup func(*Table)) string {
	var b bytes.Buffer
	t := NewTable(&b, width)
	if setup != nil {
		setup(t)
	}
	for _, r := range rows {
		t.Row(r...)
	}
	_ = t.Flush()
	return b.String()
}

var wideRows = [][]string{
	{"TARGET", "DRIVER", "GPUS", "SOURCE"},
	{"sagemaker/p5", "535.104.05", "H100", "AWS SageMaker documentation of the p5 instance family, read 2026-12-01"},
	{"gke/a3-highgpu", "550.90.07?", "H100,H100-80GB", "Google Kubernetes Engine: GPU driver versions per node image, read 2026-12-01"},
	{},
	{"found", ""},
}

func TestTableUnlimitedIsTabwriter(t *testing.T) {
	want := tabwriterOut(wideRows)
	for _, width := range []int{0, 500} { // unlimited, and a table that fits
		if got := tableOut(wideRows, width, func(t *Table) { t.Shrink(3) }); got != want {
			t.Errorf("width %d:\n%s\nwant tabwriter's\n%s", width, got, want)
		}
	}
}

func TestTableFits(t *testing.T) {
	path := "/usr/local/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so"
	tests := []struct {
		name  string
		rows  [][]string
		width int
		setup func(*Table)
		want  []string // substrings of the output
	}{
		{"free text first", wideRows, 60, func(t *Table) { t.Shrink(3) }, []string{"sagemaker/p5", "gke/a3-highgpu", "H100,H100-80GB", "AWS SageMaker" + "", Ellipsis}},
		{"middle of a path", [][]string{{"  " + path, "sm_80 sm_90"}}, 40, func(t *Table) { t.Fit(0, CutMiddle) }, []string{"libtorch_cuda.so", "  /usr", Ellipsis, "sm_80 sm_90"}},
		{"wrapped last column", [][]string{{"FAIL", "gpu", "3 libraries have no kernels for H100 (sm_90): libtorch_cuda.so (has sm_80)"}}, 40, func(t *Table) { t.Fit(2, Wrap) }, []string{"FAIL  gpu  3 libraries have no kernels\n", "\n           for H100 (sm_90):\n", "           libtorch_cuda.so (has sm_80)\n"}},
		{"others when the named are not enough", wideRows, 40, func(t *Table) { t.Shrink(3) }, []string{"TARGET", Ellipsis}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tableOut(tt.rows, tt.width, tt.setup)
			for line := range strings.SplitSeq(strings.TrimSuffix(got, "\n"), "\n") {
				if n := utf8.RuneCountInString(strings.TrimRight(line, " ")); n > tt.width {
					t.Errorf("line of %d runes in a %d-column table: %q", n, tt.width, line)
				}
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("output lacks %q:\n%s", w, got)
				}
			}
		})
	}
}

func TestShorten(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		f    Fit
		want string
	}{
		{"short", 8, CutEnd, "short"},
		{"NVIDIA GeForce RTX 4090", 12, CutEnd, "NVIDIA GeFo…"},
		{"NVIDIA GeForce RTX 4090", 8, CutEnd, "NVIDIA…"}, // no space before the mark
		{"/usr/lib/x86_64-linux-gnu/libcudnn.so.9", 20, CutMiddle, "/usr/l…libcudnn.so.9"},
		{"abc", 1, CutEnd, Ellipsis},
	}
	for _, tt := range tests {
		got := shorten(tt.s, tt.n, tt.f)
		if got != tt.want {
			t.Errorf("shorten(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
		if n := utf8.RuneCountInString(got); n > max(tt.n, 1) {
			t.Errorf("shorten(%q, %d) = %q: %d runes", tt.s, tt.n, got, n)
		}
	}
}

func TestTableDrop(t *testing.T) {
	rows := [][]string{
		{"TARGET", "DRIVER", "GPUS", "RUNTIME", "SOURCE"},
		{"gke/cos-default", "535.104.05", "T4,L4,A100-SXM4-40GB,A100-SXM4-80GB,H100-SXM", "serve :8080 /ping root", "tgt-gke-cos-driver-versions"},
	}
	tests := []struct {
		width int
		want  string
	}{
		{200, ""},
		{100, ""}, // shortening is enough
		{60, "(left out to fit 60 columns: SOURCE; --wide shows them)\n"},
		{45, "--wide shows them)\n"}, // the note wraps too: "SOURCE, RUNTIME;" above
	}
	for _, tt := range tests {
		got := tableOut(rows, tt.width, func(t *Table) { t.Drop(-1, 3) })
		lines := strings.SplitAfter(strings.TrimSuffix(got, "\n"), "\n")
		if last := lines[len(lines)-1] + "\n"; tt.want != "" && last != tt.want || tt.want == "" && strings.Contains(got, "left out") {
			t.Errorf("width %d: last line %q, want %q\n%s", tt.width, last, tt.want, got)
		}
		if !strings.Contains(got, "gke/cos-default") {
			t.Errorf("width %d: the row's name was cut:\n%s", tt.width, got)
		}
	}
}

// TestTableDropAlone: when leaving Drop's columns out is enough to fit,
// they are still left out (the cut is not only for shortened tables).
func TestTableDropAlone(t *testing.T) {
	var b strings.Builder
	tb := NewTable(&b, 15).Drop(1)
	tb.Row("NAME", "DETAIL-LONGER")
	tb.Row("a", "b")
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(b.String(), "\n"); lines[0] != "NAME" || lines[1] != "a" || !strings.Contains(b.String(), "DETAIL-LONGER;") {
		t.Errorf("got:\n%s", b.String())
	}
}
