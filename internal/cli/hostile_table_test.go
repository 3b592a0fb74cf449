package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

// The bounds every run of the hostile table is held to.
const (
	// hostileDeadline is the context deadline of one command: it detects
	// a hang, not slowness (a refusal takes well under a second, a
	// registry stall the 2 s timeouts the table passes).
	hostileDeadline = 45 * time.Second
	// hostileMaxRSS is the peak memory one command may reach: gpuimg
	// reads every input as a stream, and an unbounded one took 24 GiB.
	hostileMaxRSS = 256 << 20
)

// hostileVerb is one verb the table runs on every case (of only, when
// set): args is its command line, out an empty directory for what it
// writes, dst a repository for what it pushes.
type hostileVerb struct {
	name string
	args func(src, out, dst string) []string
	only testenv.HostileClass
}

// hostileVerbs are the verbs that read an image someone else built.
var hostileVerbs = []hostileVerb{
	{name: "validate", args: func(src, _, _ string) []string { return []string{"validate", src} }},
	{name: "validate -o json", args: func(src, _, _ string) []string { return []string{"validate", src, "-o", "json"} }, only: testenv.ClassSecrets},
	{name: "sbom", args: func(src, out, _ string) []string {
		return []string{"sbom", src, "--file", filepath.Join(out, "sbom.json")}
	}},
	{name: "export", args: func(src, out, _ string) []string {
		return []string{"images", "export", src, filepath.Join(out, "image.tar")}
	}},
	{name: "convert", args: func(src, _, dst string) []string {
		return []string{"images", "convert", src, dst, "--compression", "zstd"}
	}},
	{name: "import", args: func(src, _, dst string) []string {
		return []string{"images", "import", src, "--target", "eks/p5", "--to", dst}
	}},
	{name: "copy", args: func(src, _, dst string) []string { return []string{"images", "copy", src, dst} }},
}

// hostileOutcome is what a verb must do with a case: exit with code; a
// non-zero code must leave nothing written or pushed.
func hostileOutcome(c testenv.HostileCase, verb string) (code int) {
	verb, _, _ = strings.Cut(verb, " ") // validate -o json: as validate
	switch c.Class {
	case testenv.ClassLinks:
		switch verb {
		case "sbom", "copy":
			return 0 // an inventory, and a copy of the blobs unchanged: nothing is unpacked
		}
		return ExitFailed // validate's unsafe-paths check fails; export, convert and import refuse it
	case testenv.ClassSecrets:
		switch verb {
		case "validate", "import":
			return ExitFailed // the secrets check fails
		}
		return 0 // sbom, export, convert and copy move or list the bytes, printing none
	}
	return ExitInvalid // a bound: could not run
}

// TestHostileTable runs every case of the hostile corpus
// (testenv.HostileCorpus: layouts, archives, link escapes, secrets,
// misbehaving registries) through every verb that reads images other
// people built, on the real gpuimg binary, each command under a context
// deadline, a peak-memory bound and its own TMPDIR. Each must exit as
// hostileOutcome says; a refusal writes nothing (the output directory
// empty, no tag pushed), every run leaves TMPDIR empty, and no secret is
// printed.
func TestHostileTable(t *testing.T) {
	if testing.Short() && os.Getenv("GPUIMG_SIGNAL_TESTS") == "" {
		t.Skip("builds the gpuimg binary; set GPUIMG_SIGNAL_TESTS=1 to run it under -short")
	}
	bin := gpuimgBinary(t)
	cases, closeCorpus, err := testenv.HostileCorpus(t.Context(), t.TempDir())
	must(t, err)
	t.Cleanup(func() { _ = closeCorpus() })
	checkClasses(t, cases)
	// Pushes go to a registry of their own: on the source's, copy would
	// mount the blobs instead of reading them.
	dst, err := testenv.StartBadRegistry()
	must(t, err)
	t.Cleanup(func() { _ = dst.Close() })
	measureDir := t.TempDir()
	must(t, testenv.GoBuild(t.Context(), "./internal/testenv/peakrss", filepath.Join(measureDir, "peakrss")))
	for i, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel() // each case has its own source registry; the commands mostly wait
			for _, v := range hostileVerbs {
				if v.only != "" && v.only != c.Class {
					continue
				}
				repo := fmt.Sprintf("dst/c%02d/%s", i, strings.Fields(v.name)[0])
				t.Run(v.name, func(t *testing.T) { runHostile(t, bin, measureDir, c, v, dst.Host, repo) })
			}
		})
	}
}

// checkClasses fails when a class of the corpus has no case: the table
// must not lose one when the corpus changes.
func checkClasses(t *testing.T, cases []testenv.HostileCase) {
	t.Helper()
	for _, class := range testenv.HostileClasses {
		if !slices.ContainsFunc(cases, func(c testenv.HostileCase) bool { return c.Class == class }) {
			t.Errorf("the corpus has no %s case", class)
		}
	}
}

func runHostile(t *testing.T, bin, measureDir string, c testenv.HostileCase, v hostileVerb, dstHost, repo string) {
	out, tmp := t.TempDir(), t.TempDir()
	args := append(v.args(c.Source, out, dstHost+"/"+repo+":t"),
		"--insecure", "--retries", "1", "--registry-header-timeout", "2s", "--registry-stall-timeout", "2s")
	ctx, cancel := context.WithTimeout(t.Context(), hostileDeadline)
	defer cancel()
	cmd, err := testenv.Measure(ctx, measureDir, bin, args...)
	must(t, err)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	start := time.Now()
	err = cmd.Run()
	took := time.Since(start)
	if ctx.Err() != nil {
		t.Fatalf("still running after %s\n%s", hostileDeadline, lastLines(stderr.String(), 5))
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	code := cmd.ProcessState.ExitCode()
	printed := stdout.String() + stderr.String()
	want := hostileOutcome(c, v.name)
	t.Logf("exit %d in %.1fs", code, took.Seconds())
	if code != want {
		t.Errorf("exit %d, want %d\n%s", code, want, lastLines(printed, 8))
	}
	if want != 0 && !strings.Contains(printed, c.Names) {
		t.Errorf("the output does not name %q:\n%s", c.Names, lastLines(printed, 8))
	}
	if c.Secret != "" && strings.Contains(printed, c.Secret) {
		t.Errorf("the secret is printed")
	}
	if rss, err := cmd.MaxRSS(); err != nil || rss > hostileMaxRSS {
		t.Errorf("peak memory %d MiB (%v), over the bound of %d MiB", rss>>20, err, hostileMaxRSS>>20)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left %d files in TMPDIR", len(left))
	}
	if code == 0 {
		return
	}
	if left, _ := os.ReadDir(out); len(left) != 0 {
		t.Errorf("wrote %d files", len(left))
	}
	if pushed, err := hasTags(t, dstHost, repo); err != nil || pushed {
		t.Errorf("%s was pushed to (%v)", repo, err)
	}
}

// hasTags says whether repo has a tag on host.
func hasTags(t *testing.T, host, repo string) (bool, error) {
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, fmt.Sprintf("http://%s/v2/%s/tags/list", host, repo), nil)
	if err != nil {
		return false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNotFound:
		return false, nil
	case http.StatusOK:
		return true, nil
	}
	return false, fmt.Errorf("tags/list: %s", resp.Status)
}
