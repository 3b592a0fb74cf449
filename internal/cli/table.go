package cli

import (
	"io"

	"github.com/gpuimg/gpuimg/internal/humanize"
)

// table writes aligned columns fitted to width (0: unlimited;
// screenWidth gives a command's).
type table struct{ *humanize.Table }

func newTable(w io.Writer, width int) *table { return &table{humanize.NewTable(w, width)} }

func (t *table) row(cols ...string) { t.Row(cols...) }

func (t *table) flush() error { return t.Flush() }
