package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpuimg/gpuimg/internal/humanize"
	"github.com/gpuimg/gpuimg/matrix"
)

// releasesView is matrix resolve --all: every release of one framework
// with its best stack under the constraints, or why none fits.
type releasesView struct {
	Framework string              `json:"framework" yaml:"framework"`
	Fits      int                 `json:"fits" yaml:"fits"`
	Releases  []matrix.ReleaseFit `json:"releases" yaml:"releases"`
}

// resolveAll runs matrix resolve --all; it exits 1 when no release fits.
func resolveAll(w io.Writer, output string, db *matrix.DB, c matrix.Constraints, width int) error {
	name, fits, err := db.ResolveEach(c)
	if err != nil {
		return invalid(err, "")
	}
	v := releasesView{Framework: name, Releases: fits}
	for _, f := range fits {
		if f.Stack != nil {
			v.Fits++
		}
	}
	err = render(w, output, v, func() error { return releasesTable(w, v, width) })
	if err != nil {
		return err
	}
	if v.Fits == 0 {
		return &Error{Err: fmt.Errorf("no %s release fits these constraints (the reasons are above)", name), Code: ExitFailed}
	}
	return nil
}

// releasesTable is resolve --all's table: one row per release, its stack
// in a line, or "no:" and the reason.
func releasesTable(w io.Writer, v releasesView, width int) error {
	t := newTable(w, width)
	t.Fit(2, humanize.Wrap)
	t.row(strings.ToUpper(v.Framework), "FITS", "BEST STACK, OR WHY NONE FITS")
	for _, f := range v.Releases {
		if f.Stack == nil {
			t.row(f.Version, "no", f.Reason)
			continue
		}
		line := f.Stack.Summary() + ", " + f.Stack.BaseImage
		if f.Stack.BaseImageEOL {
			line += " (end of life"
			if a := f.Stack.SupportedAlternative; a != nil {
				line += "; on a supported base: " + a.Short()
			}
			line += ")"
		}
		t.row(f.Version, "yes", line)
	}
	if err := t.flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d of %d %s releases fit; gpuimg matrix resolve --%s VERSION with the same flags shows one in full\n", v.Fits, len(v.Releases), v.Framework, v.Framework)
	return err
}
