package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Measured is a command started through the peakrss go-between
// (internal/testenv/peakrss), so that its peak memory can be read after
// it ran. Set Stdin, Stdout, Stderr and Env on Cmd as usual.
type Measured struct {
	*exec.Cmd
	file string
}

// Measure builds peakrss into dir (go's build cache makes that quick
// after the first time) and returns name with args, to be run through it.
func Measure(ctx context.Context, dir, name string, args ...string) (*Measured, error) {
	bin := filepath.Join(dir, "peakrss")
	if _, err := os.Stat(bin); err != nil {
		if err := GoBuild(ctx, "./internal/testenv/peakrss", bin); err != nil {
			return nil, err
		}
	}
	f, err := os.CreateTemp(dir, "maxrss-")
	if err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return &Measured{Cmd: exec.CommandContext(ctx, bin, append([]string{f.Name(), name}, args...)...), file: f.Name()}, nil
}

// MaxRSS is the command's peak resident memory in bytes, once it has run.
func (m *Measured) MaxRSS() (int64, error) {
	b, err := os.ReadFile(m.file)
	if err != nil {
		return 0, err
	}
	if len(b) == 0 {
		return 0, fmt.Errorf("%s: peakrss wrote no max RSS (did the command run?)", m.Args[2])
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}
