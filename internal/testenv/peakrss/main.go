// Command peakrss runs a command and writes the command's peak resident
// memory (its max RSS, in bytes) to a file:
//
//	peakrss FILE COMMAND [ARG...]
//
// It exits with the command's exit code (128+N when signal N killed it,
// 125 when peakrss itself failed). Tests and benchmarks start the command
// they measure through it (testenv.Measure) because the max RSS a large
// process reads for its own child is not the child's: Go starts children
// with vfork (CLONE_VM), and Linux folds the high-water mark of the memory
// the child leaves at exec, the parent's, into the child's max RSS. A
// test binary that has used 300 MiB reads at least 300 MiB for any child.
// peakrss is small, so its children's figures are their own, give or
// take peakrss's own couple of MiB.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
)

func main() {
	// The command dies with peakrss (Pdeathsig follows the thread that
	// started it), so a test that kills peakrss leaves nothing behind.
	runtime.LockOSThread()
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: peakrss FILE COMMAND [ARG...]")
		return 125
	}
	// The command gets the terminal's signals itself; peakrss waits for it.
	signal.Ignore(os.Interrupt, syscall.SIGTERM)
	cmd := exec.Command(args[1], args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err := cmd.Run()
	if _, ok := errors.AsType[*exec.ExitError](err); err != nil && !ok {
		fmt.Fprintln(os.Stderr, "peakrss:", err)
		return 125
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		fmt.Fprintln(os.Stderr, "peakrss: no resource usage for", args[1])
		return 125
	}
	// Linux gives ru_maxrss in KiB.
	if err := os.WriteFile(args[0], []byte(strconv.FormatInt(ru.Maxrss<<10, 10)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "peakrss:", err)
		return 125
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return cmd.ProcessState.ExitCode()
}
