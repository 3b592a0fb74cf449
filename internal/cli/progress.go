package cli

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/internal/progress"
)

// Every long read or write but a build shows its progress through
// internal/progress on stderr (builds keep BuildKit's progressui): the
// command binds --progress with progressFlag and passes the option
// showProgress returns to images, which reports layer reads and pushes.

// progressFlag binds --progress to p.
func progressFlag(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "progress", string(progress.Auto), "progress on stderr: auto (redrawn in place on a terminal, else plain), plain (a line every 10s and every tenth of the bytes) or quiet")
}

// showProgress starts the display of cmd's work called label in mode
// (--progress; the global --quiet makes it quiet). It returns the images
// option that feeds the display and the function that ends it.
func showProgress(cmd *cobra.Command, label, mode string) (images.Option, func(), error) {
	update, done, err := newProgress(cmd, label, mode)
	if err != nil {
		return nil, nil, err
	}
	return images.WithProgress(update), done, nil
}

// newProgress is showProgress's display: the function that updates it
// and the one that ends it.
func newProgress(cmd *cobra.Command, label, mode string) (func(images.Progress), func(), error) {
	d, err := newDisplay(cmd, label, mode)
	if err != nil {
		return nil, nil, err
	}
	update := func(p images.Progress) {
		d.Update(progress.State{Bytes: p.Bytes, Total: p.Total, LayersDone: p.LayersDone, Layers: p.Layers})
	}
	return update, d.Done, nil
}

// newDisplay is the progress display of cmd's work called label on
// stderr in mode (--progress; the global --quiet makes it quiet).
func newDisplay(cmd *cobra.Command, label, mode string) (*progress.Display, error) {
	if err := checkProgress(mode); err != nil {
		return nil, err
	}
	m := progress.Mode(mode)
	if quiet(cmd) {
		m = progress.Quiet
	}
	w := cmd.ErrOrStderr()
	_, tty := isTerminal(w)
	return progress.New(w, label, m, tty, nil), nil
}

// checkProgress refuses a --progress value that is not a mode.
func checkProgress(mode string) error {
	if slices.Contains(progress.Modes(), mode) {
		return nil
	}
	return invalid(fmt.Errorf("unknown progress mode %q", mode), "use --progress auto, plain or quiet")
}
