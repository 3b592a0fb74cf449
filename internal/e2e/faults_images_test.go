package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

// TestImagesFaults runs issue 15's faults in copies and exports against
// real distribution registries: a disk that fills while exporting or
// spooling (a small tmpfs; root), two copies racing to one tag, and
// SIGINT during a copy (the real binary).
func TestImagesFaults(t *testing.T) {
	testenv.Require(t, "starts real registries", testenv.Slow)
	ctx := t.Context()
	tools, err := testenv.BuildTools(ctx)
	must(t, err)
	a, err := testenv.StartRegistry(ctx, tools.Registry, t.TempDir())
	must(t, err)
	defer a.Stop()
	b, err := testenv.StartRegistry(ctx, tools.Registry, t.TempDir())
	must(t, err)
	defer b.Stop()
	pushImage := func(ref string, tg remote.Taggable) string {
		r, err := name.ParseReference(ref, name.Insecure)
		must(t, err)
		switch x := tg.(type) {
		case v1.Image:
			must(t, remote.Write(r, x, remote.WithContext(ctx)))
			d, _ := x.Digest()
			return d.String()
		case v1.ImageIndex:
			must(t, remote.WriteIndex(r, x, remote.WithContext(ctx)))
			d, _ := x.Digest()
			return d.String()
		}
		t.Fatalf("cannot push %T", tg)
		return ""
	}
	// 8 MiB of random (incompressible) layers: more than the tmpfs holds.
	big, err := random.Image(4<<20, 2)
	must(t, err)
	bigRef := a.Host + "/faults/big:1"
	pushImage(bigRef, big)

	t.Run("disk full while exporting or spooling: clean error, no partial file", func(t *testing.T) {
		testenv.Require(t, "mounts a tmpfs", testenv.Root)
		full := t.TempDir()
		if out, err := exec.CommandContext(ctx, "mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", full).CombinedOutput(); err != nil {
			t.Skipf("mount tmpfs: %v %s", err, out)
		}
		defer func() {
			if out, err := exec.Command("umount", full).CombinedOutput(); err != nil {
				t.Errorf("umount %s: %v %s", full, err, out)
			}
		}()
		empty := func(what string) {
			t.Helper()
			ents, _ := os.ReadDir(full)
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			if len(names) > 0 {
				t.Errorf("%s left %v on the full disk", what, names)
			}
		}
		for _, format := range []string{"oci-archive", "oci", "docker-archive"} {
			dest := filepath.Join(full, "big."+format)
			_, errOut, code := run(t, "images", "export", bigRef, dest, "--format", format)
			t.Logf("export %s: %s", format, strings.TrimSpace(errOut))
			if code == 0 || !strings.Contains(errOut, "no space left on device") || strings.Count(errOut, "gpuimg: ") != 1 {
				t.Errorf("export %s to a full disk: exit %d, stderr %q", format, code, errOut)
			}
			empty("export " + format)
		}
		t.Setenv("TMPDIR", full)
		dsts := []string{b.Host + "/faults/spool:1", b.Host + "/faults/spool-mirror:1"}
		_, errOut, code := run(t, append([]string{"images", "copy", bigRef, "--read-source-once"}, dsts...)...)
		t.Logf("copy: %s", strings.TrimSpace(errOut))
		if code == 0 || !strings.Contains(errOut, "no space left on device") || strings.Count(errOut, "gpuimg: ") != 1 {
			t.Errorf("copy spooling to a full disk: exit %d, stderr %q", code, errOut)
		}
		empty("copy --read-source-once")
		for _, d := range dsts {
			if tagExists(t, d) {
				t.Errorf("a copy that failed to spool wrote %s", d)
			}
		}
	})

	t.Run("two copies to one tag at once: the tag is one of the two, complete", func(t *testing.T) {
		for round := range 4 {
			var srcs []string
			want := map[string]bool{}
			for i := range 2 {
				var tg remote.Taggable
				if round%2 == 0 {
					tg, err = random.Image(256<<10, 3)
				} else {
					tg, err = random.Index(128<<10, 2, 3)
				}
				must(t, err)
				ref := fmt.Sprintf("%s/faults/race-src:%d-%d", a.Host, round, i)
				want[pushImage(ref, tg)] = true
				srcs = append(srcs, ref)
			}
			dst := fmt.Sprintf("%s/faults/race:%d", b.Host, round)
			var wg sync.WaitGroup
			codes := make([]int, 2)
			errs := make([]string, 2)
			for i, src := range srcs {
				wg.Go(func() { _, errs[i], codes[i] = run(t, "images", "copy", src, dst) })
			}
			wg.Wait()
			for i := range codes {
				if codes[i] != 0 {
					t.Fatalf("round %d: copy %d exited %d: %s", round, i, codes[i], errs[i])
				}
			}
			r, err := name.ParseReference(dst, name.Insecure)
			must(t, err)
			desc, err := remote.Get(r, remote.WithContext(ctx))
			must(t, err)
			if !want[desc.Digest.String()] {
				t.Fatalf("round %d: the tag is at %s, neither source", round, desc.Digest)
			}
			if desc.MediaType.IsIndex() {
				idx, err := desc.ImageIndex()
				must(t, err)
				err = validate.Index(idx)
				if err != nil {
					t.Errorf("round %d: the tag's index is incomplete: %v", round, err)
				}
			} else {
				img, err := desc.Image()
				must(t, err)
				if err := validate.Image(img); err != nil {
					t.Errorf("round %d: the tag's image is incomplete: %v", round, err)
				}
			}
		}
	})

	t.Run("SIGINT during a copy: uploads cancelled, no tag, no temporary files, exit 130", func(t *testing.T) {
		// Hand out the first layer, hold the second: one blob is spooled
		// (and uploading) when the signal comes.
		l, _ := big.Layers()
		second, _ := l[1].Digest()
		h := holdBlob(t, "http://"+a.Host, second)
		dsts := []string{b.Host + "/faults/sigint:1", b.Host + "/faults/sigint-mirror:1"}
		proc := start(t, gpuimgBinary(t), nil, append([]string{"images", "copy", h.host + "/faults/big:1", "--read-source-once"}, dsts...)...)
		h.interrupt(t, proc, "copy", syscall.SIGINT, "SIGINT", 130)
		for _, d := range dsts {
			if tagExists(t, d) {
				t.Errorf("an interrupted copy wrote %s", d)
			}
		}
		if left := proc.leftovers(); len(left) > 0 {
			t.Errorf("temporary files left: %v", left)
		}
	})

	t.Run("SIGTERM during an import: reads cancelled, nothing pushed, no temporary files, exit 143", func(t *testing.T) {
		l, _ := big.Layers()
		second, _ := l[1].Digest()
		h := holdBlob(t, "http://"+a.Host, second)
		// A fleet that takes anything: the import reads every layer
		// (validation) and pushes; the signal comes while it reads.
		mf := filepath.Join(t.TempDir(), "fleet.yaml")
		must(t, os.WriteFile(mf, []byte("sources: [{id: ours, url: https://wiki.example.com}]\ntargets:\n  - {name: onprem/any, index: true, attestations: true, source: ours}\n"), 0o644))
		dst := b.Host + "/faults/import:1"
		proc := start(t, gpuimgBinary(t), nil, "images", "import", h.host+"/faults/big:1", "--target", "onprem/any", "--to", dst, "--matrix-file", mf)
		h.interrupt(t, proc, "import", syscall.SIGTERM, "SIGTERM", 143)
		if tagExists(t, dst) {
			t.Errorf("an interrupted import wrote %s", dst)
		}
		if left := proc.leftovers(); len(left) > 0 {
			t.Errorf("temporary files left: %v", left)
		}
	})
}

// heldBlob is a fault proxy in front of a registry that holds every GET
// of one blob until the test ends.
type heldBlob struct {
	host string             // the proxy's host:port
	held chan *http.Request // a request for the blob arrived
	gone atomic.Int32       // held requests the client gave up
}

func holdBlob(t *testing.T, upstream string, blob v1.Hash) *heldBlob {
	t.Helper()
	p, err := testenv.StartFaultProxy(upstream)
	must(t, err)
	t.Cleanup(func() { _ = p.Close() })
	h := &heldBlob{host: p.Host, held: make(chan *http.Request, 8)}
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	p.SetRule(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/blobs/"+blob.String()) {
			return false
		}
		if testenv.Hold(w, r, h.held, release, 2*time.Minute) {
			h.gone.Add(1)
		}
		return true
	})
	return h
}

// interrupt waits until proc asks for the held blob, sends it sig, and
// checks that it exits with code, says it was interrupted by name, and
// gave up the held request.
func (h *heldBlob) interrupt(t *testing.T, proc *proc, what string, sig syscall.Signal, name string, code int) {
	t.Helper()
	select {
	case <-h.held:
	case <-time.After(time.Minute):
		t.Fatalf("the %s never asked for the held blob:\n%s", what, proc.stderr.String())
	}
	must(t, proc.cmd.Process.Signal(sig))
	if got := proc.wait(t, 30*time.Second); got != code {
		t.Errorf("exit %d, want %d:\n%s", got, code, proc.stderr.String())
	}
	t.Logf("%s: %s", what, strings.TrimSpace(proc.stderr.String()))
	if errOut := proc.stderr.String(); !strings.Contains(errOut, "gpuimg: interrupted by "+name) {
		t.Errorf("stderr does not say it was interrupted:\n%s", errOut)
	}
	for deadline := time.Now().Add(10 * time.Second); h.gone.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if h.gone.Load() == 0 {
		t.Error("the held download was not cancelled")
	}
}
