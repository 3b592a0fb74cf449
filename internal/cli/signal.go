package cli

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
)

// Interrupted is the cause of a context that a signal cancelled
// (SignalContext). Main exits with its ExitCode.
type Interrupted struct{ Signal syscall.Signal }

func (e *Interrupted) Error() string { return "interrupted by " + signalName(e.Signal) }

// ExitCode is the shell's code for a process ended by the signal: 128 + n
// (130 for SIGINT, 143 for SIGTERM).
func (e *Interrupted) ExitCode() int { return 128 + int(e.Signal) }

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// SignalContext returns a context that SIGINT or SIGTERM cancels with an
// *Interrupted cause: the command cancels its BuildKit solves and uploads,
// removes its temporary files and returns, and Main exits 130 or 143. A
// second signal ends the process at once with that code, without waiting
// for the clean-up. stop stops listening.
func SignalContext(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			cancel(&Interrupted{Signal: s.(syscall.Signal)})
		case <-done:
			return
		}
		select {
		case s := <-sigs:
			os.Exit((&Interrupted{Signal: s.(syscall.Signal)}).ExitCode())
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(context.Canceled)
	}
}

// interrupted returns the signal that cancelled ctx, if one did.
func interrupted(ctx context.Context) (*Interrupted, bool) {
	var in *Interrupted
	ok := errors.As(context.Cause(ctx), &in)
	return in, ok
}
