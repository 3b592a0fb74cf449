package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// urlBearing says whether a flag takes a URL (or a value holding one).
func urlBearing(f *pflag.Flag) bool {
	switch f.Value.Type() {
	case "string", "stringArray", "stringSlice":
	default:
		return false
	}
	n := f.Name
	return strings.Contains(n, "url") || strings.Contains(n, "mirror") || strings.Contains(n, "links") ||
		n == "fabric-source" || n == "builder" || strings.Contains(f.Usage, "URL")
}

// secretURL is a value for flag n with a password in its URL, on a
// loopback port nothing listens on, so whatever reaches for it fails fast.
func secretURL(n, password string) string {
	u := "http://ci:" + password + "@127.0.0.1:1"
	switch {
	case strings.Contains(n, "registry-mirror"):
		return "docker.io=" + u
	case n == "fabric-source":
		return u + "/efa.tar.gz#sha256=" + strings.Repeat("0", 64)
	case n == "builder":
		return "tcp://ci:" + password + "@127.0.0.1:1"
	}
	return u + "/simple"
}

// everyCommand lists the runnable commands under c.
func everyCommand(c *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	if c.Runnable() {
		out = append(out, c)
	}
	for _, s := range c.Commands() {
		out = append(out, everyCommand(s)...)
	}
	return out
}

// TestNoPasswordPrinted walks every flag of every command, gives each
// URL-bearing one a URL with a password, and checks the password is
// printed nowhere, whatever the command makes of it (a usage error, a
// refused mirror, a connection refused, a Dockerfile).
func TestNoPasswordPrinted(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	const password = "Pa55w0rdThatMustNotShow"
	tried := 0
	for _, c := range everyCommand(NewRoot()) {
		path := strings.Fields(c.CommandPath())[1:]
		var flags []*pflag.Flag
		c.Flags().VisitAll(func(f *pflag.Flag) { flags = append(flags, f) })
		c.InheritedFlags().VisitAll(func(f *pflag.Flag) { flags = append(flags, f) })
		for _, f := range flags {
			if !urlBearing(f) {
				continue
			}
			tried++
			args := append(append([]string(nil), path...), "--"+f.Name+"="+secretURL(f.Name, password))
			args = append(args, safeArgs(c)...)
			t.Run(strings.Join(path, "_")+"/"+f.Name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
				defer cancel()
				var out, errb bytes.Buffer
				Main(ctx, args, &out, &errb)
				if strings.Contains(out.String()+errb.String(), password) {
					t.Errorf("gpuimg %s printed the password:\nstdout: %s\nstderr: %s", strings.Join(args, " "), lastLines(out.String(), 5), lastLines(errb.String(), 5))
				}
			})
		}
	}
	if tried < 10 {
		t.Errorf("only %d URL-bearing flags found: the walk no longer sees them", tried)
	}
}

// safeArgs keeps a command from reaching further than the loopback port:
// no retries, builds print their Dockerfile, a positional argument names
// a registry on a closed port.
func safeArgs(c *cobra.Command) []string {
	var out []string
	if c.Flags().Lookup("retries") != nil {
		out = append(out, "--retries=0")
	}
	if c.Flags().Lookup("dockerfile-only") != nil {
		out = append(out, "--dockerfile-only")
	}
	if c.Args != nil && c.Args(c, nil) != nil {
		out = append(out, "127.0.0.1:1/x/y:z")
	}
	return out
}
