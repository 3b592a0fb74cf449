package gpurun

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"
)

// ProgressPrefix starts the progress lines the probe writes on stderr
// (Progress), so that Run can pass them through from a container.
const ProgressPrefix = "gpuimg: probe: "

// Progress returns a gpuprobe.Options.Progress that writes each step
// the probe finishes to w (stderr), so a 12-minute benchmark run shows
// where it is. Run passes these lines through from the container.
func Progress(w io.Writer) func(step string, elapsed time.Duration) {
	return func(step string, elapsed time.Duration) {
		fmt.Fprintf(w, "%s%s done after %s\n", ProgressPrefix, step, elapsed.Round(time.Second))
	}
}

// progressLines keeps everything written to it and copies the probe's
// progress lines to another writer as whole lines arrive.
type progressLines struct {
	keep    *strings.Builder
	to      io.Writer
	partial []byte
}

func (p *progressLines) Write(b []byte) (int, error) {
	p.keep.Write(b)
	p.partial = append(p.partial, b...)
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			return len(b), nil
		}
		if line := p.partial[:i+1]; bytes.HasPrefix(line, []byte(ProgressPrefix)) {
			_, _ = p.to.Write(line)
		}
		p.partial = p.partial[i+1:]
	}
}
