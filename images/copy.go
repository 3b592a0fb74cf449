package images

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"golang.org/x/sync/errgroup"
)

// Blob is one blob of a copy.
type Blob struct {
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// DestResult is what happened at one destination.
type DestResult struct {
	Ref    string `json:"ref"`
	Digest string `json:"digest"`
	// Blobs and Bytes count every blob the image needs; Present and
	// PresentBytes those the destination already had (skipped).
	Blobs        int   `json:"blobs"`
	Bytes        int64 `json:"bytes"`
	Present      int   `json:"present"`
	PresentBytes int64 `json:"present_bytes"`
	// Referrers counts the referrers copied (WithReferrers).
	Referrers int `json:"referrers,omitempty"`
}

// CopyResult is the outcome of a copy.
type CopyResult struct {
	Source       string       `json:"source"`
	Digest       string       `json:"digest"`
	MediaType    string       `json:"media_type"`
	DryRun       bool         `json:"dry_run"`
	Destinations []DestResult `json:"destinations"`
	// Referrers are what refers to the copied manifests in the source
	// (signatures, attestations, SBOMs, validation reports), carried to
	// every destination unless WithReferrers(false); digests are kept, so
	// signatures still verify there.
	Referrers []Referrer `json:"referrers,omitempty"`
	Duration  float64    `json:"seconds"`
}

// ErrUnauthorized is wrapped when a registry refuses the credentials.
var ErrUnauthorized = errors.New("unauthorized")

// explain turns registry errors into one line naming the registry and the fix.
func explain(op string, ref name.Reference, err error) error {
	if te, ok := errors.AsType[*transport.Error](err); ok {
		switch te.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Errorf("%s %s: %w: the registry %s refused the credentials (%d); log in with %s (gpuimg reads Docker's config.json and credential helpers)",
				op, ref, ErrUnauthorized, ref.Context().RegistryStr(), te.StatusCode, LoginHint(ref.Context().RegistryStr()))
		case http.StatusNotFound:
			return fmt.Errorf("%s %s: not found (%d)", op, ref, te.StatusCode)
		}
	}
	return fmt.Errorf("%s %s: %w", op, ref, err)
}

// Copy copies src (an image or a whole multi-platform index) to every
// destination at once, byte for byte: manifests are pushed unchanged, so
// digests are preserved. Blobs the destination has are skipped, blobs of
// another repository on the same registry are mounted, blobs move in
// parallel, and transient errors are retried. Each destination's tag is
// written only after all its blobs and child manifests are in place, so a
// failed or interrupted copy never leaves a tag on an incomplete image.
//
// The referrers of each copied manifest in a registry source (OCI 1.1
// referrers, found through the Referrers API or its tag fallback, and
// cosign v2's sha256-<hex>.sig/.att/.sbom tags) are copied after it, so
// that signatures, attestations, SBOMs and validation reports come along;
// WithReferrers(false) leaves them.
//
// WithPlatform narrows an index to one image (a new digest); WithDryRun,
// WithReadSourceOnce, WithProgress and WithJobs tune the copy.
func Copy(ctx context.Context, src string, dsts []string, opts ...Option) (*CopyResult, error) {
	start := time.Now()
	if len(dsts) == 0 {
		return nil, errors.New("copy: no destination")
	}
	opt, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	var dstRefs []name.Reference
	for _, d := range dsts {
		if dr, err := ParseRef(d); err == nil && dr.Transport != Registry {
			return nil, fmt.Errorf("copy to %s: copy writes to registries; write %s files with gpuimg images export", d, dr.Transport)
		}
		r, err := opt.parse(d)
		if err != nil {
			return nil, err
		}
		dstRefs = append(dstRefs, r)
	}
	cs, err := openCopySource(ctx, opt, src, opts)
	if err != nil {
		return nil, err
	}
	defer func() { _ = cs.close() }() // removes what opening an archive unpacked; nothing to report
	srcRef, taggable, digest, mediaType, blobs := cs.ref, cs.taggable, cs.digest, cs.mediaType, cs.blobs

	res := &CopyResult{Source: cs.name, Digest: digest, MediaType: mediaType, DryRun: opt.dryRun, Destinations: make([]DestResult, len(dstRefs))}
	if srcRef != nil && !opt.noReferrers {
		if res.Referrers, err = findReferrers(ctx, opt, srcRef, digest); err != nil {
			return nil, err
		}
	}
	// With ReadSourceOnce and several destinations on other registries,
	// read each source blob once into a spool that they all upload from.
	// Destinations on the source's own registry keep the original, so their
	// blobs are mounted.
	var spooled remote.Taggable
	if opt.readOnce && len(dstRefs) > 1 && !opt.dryRun && srcRef != nil { // files are read from local disk
		dir, err := os.MkdirTemp(opt.tempDir, "gpuimg-copy-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		sp := newSpool(dir)
		switch t := taggable.(type) {
		case *remote.Descriptor:
			if t.MediaType.IsIndex() {
				ii, err := t.ImageIndex()
				if err != nil {
					return nil, explain("read", srcRef, err)
				}
				spooled = newSpooledIndex(ii, sp)
			} else {
				img, err := t.Image()
				if err != nil {
					return nil, explain("read", srcRef, err)
				}
				spooled = spooledImage{Image: img, s: sp}
			}
		case v1.Image:
			spooled = spooledImage{Image: t, s: sp}
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	for i, dst := range dstRefs {
		g.Go(func() error {
			src := taggable
			if spooled != nil && dst.Context().RegistryStr() != srcRef.Context().RegistryStr() { // spooled only for a registry source
				src = spooled
			}
			dr := DestResult{Ref: dst.String(), Digest: digest, Blobs: len(blobs)}
			present, err := presentBlobs(gctx, opt, dst, blobs)
			if err != nil {
				return err
			}
			for _, b := range blobs {
				dr.Bytes += b.Size
				if present[b.Digest] {
					dr.Present++
					dr.PresentBytes += b.Size
				}
			}
			dr.Referrers = len(res.Referrers)
			res.Destinations[i] = dr
			if opt.dryRun {
				return nil
			}
			if err := push(gctx, opt, dst, src, opt.progress); err != nil {
				return err
			}
			return copyReferrers(gctx, opt, srcRef, dst, res.Referrers)
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	res.Duration = time.Since(start).Seconds()
	return res, nil
}

// copySource is what Copy pushes: a registry image or index (ref set), or
// one read from a local transport (oci:, oci-archive:, docker-archive:,
// docker-daemon:), every blob of which is checked as it is read.
type copySource struct {
	name              string
	ref               name.Reference // nil for a local source
	taggable          remote.Taggable
	digest, mediaType string
	blobs             []Blob
	close             func() error
}

func openCopySource(ctx context.Context, opt *options, src string, opts []Option) (*copySource, error) {
	r, err := ParseRef(src)
	if err != nil {
		return nil, err
	}
	cs := &copySource{name: r.String(), close: func() error { return nil }}
	if r.Transport != Registry {
		s, err := OpenSource(ctx, r, opts...)
		if err != nil {
			return nil, err
		}
		cs.close = s.Close
		var img v1.Image
		switch {
		case s.index != nil && opt.platform != nil:
			img, err = platformImage(r, s.index, opt.platform)
		case s.index != nil:
			cs.taggable, cs.digest, cs.mediaType = s.index, s.Digest, s.MediaType
			cs.blobs, err = indexBlobs(s.index)
		default:
			img = s.image
			err = checkPlatform(r, img, opt.platform)
		}
		if err == nil && img != nil {
			err = cs.setImage(img)
		}
		if err != nil {
			return nil, errors.Join(err, s.Close())
		}
		return cs, nil
	}
	if cs.ref, err = opt.parse(r.Name); err != nil {
		return nil, err
	}
	cs.name = cs.ref.String()
	puller, err := remote.NewPuller(opt.remote(ctx)...)
	if err != nil {
		return nil, err
	}
	desc, err := puller.Get(ctx, cs.ref)
	if err != nil {
		return nil, explain("read", cs.ref, err)
	}
	cs.taggable, cs.digest, cs.mediaType = desc, desc.Digest.String(), string(desc.MediaType)
	switch {
	case desc.MediaType.IsIndex() && opt.platform != nil:
		img, err := desc.Image() // narrows to the platform
		if err == nil {
			err = cs.setImage(img)
		}
		if err != nil {
			return nil, explain("read", cs.ref, err)
		}
	case opt.platform != nil:
		img, err := desc.Image()
		if err != nil {
			return nil, explain("read", cs.ref, err)
		}
		if err := checkPlatform(r, img, opt.platform); err != nil {
			return nil, err
		}
		if cs.blobs, err = imageBlobs(img); err != nil {
			return nil, explain("read", cs.ref, err)
		}
	default:
		if cs.blobs, err = descriptorBlobs(desc); err != nil {
			return nil, explain("read", cs.ref, err)
		}
	}
	return cs, nil
}

// setImage makes one image what is copied.
func (cs *copySource) setImage(img v1.Image) error {
	d, err := img.Digest()
	if err != nil {
		return err
	}
	mt, err := img.MediaType()
	if err != nil {
		return err
	}
	cs.taggable, cs.digest, cs.mediaType = img, d.String(), string(mt)
	cs.blobs, err = imageBlobs(img)
	return err
}

// push pushes an image or index to dst with the options' retries and
// credentials, reporting progress to progress (nil: none); the manifest
// is put by tag after every blob (and child manifest) is in place, so the
// tag is written last. It is the one push of Copy, Import and Convert.
func push(ctx context.Context, opt *options, dst name.Reference, t remote.Taggable, progress *progressSink) error {
	var extra []remote.Option
	var updates chan v1.Update
	var total int64 // of the last update; read once done is closed
	done := make(chan struct{})
	if progress != nil {
		updates = make(chan v1.Update, 16) // closed below, once Push returns (Pusher does not close it)
		extra = append(extra, remote.WithProgress(updates))
		go func() {
			defer close(done)
			for u := range updates {
				total = u.Total
				progress.set("push "+dst.String(), Progress{Bytes: u.Complete, Total: u.Total})
			}
		}()
	} else {
		close(done)
	}
	pusher, err := remote.NewPusher(opt.remote(ctx, extra...)...)
	if err == nil {
		err = pusher.Push(ctx, dst, t)
	}
	if updates != nil {
		close(updates)
	}
	<-done
	if err == nil && progress != nil {
		// go-containerregistry does not count the bytes read with a
		// blob's io.EOF; a push that succeeded has moved them all.
		progress.set("push "+dst.String(), Progress{Bytes: total, Total: total})
	}
	if err != nil {
		return explain("push", dst, err)
	}
	return nil
}

// descriptorBlobs lists the blobs (configs, layers, child manifests) of an
// image or index, without downloading layers.
func descriptorBlobs(desc *remote.Descriptor) ([]Blob, error) {
	if !desc.MediaType.IsIndex() {
		img, err := desc.Image()
		if err != nil {
			return nil, err
		}
		return imageBlobs(img)
	}
	idx, err := desc.ImageIndex()
	if err != nil {
		return nil, err
	}
	return indexBlobs(idx)
}

func indexBlobs(idx v1.ImageIndex) ([]Blob, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var out []Blob
	for _, d := range m.Manifests {
		switch {
		case d.MediaType.IsIndex():
			child, err := idx.ImageIndex(d.Digest)
			if err != nil {
				return nil, err
			}
			b, err := indexBlobs(child)
			if err != nil {
				return nil, err
			}
			out = append(out, b...)
		case d.MediaType.IsImage():
			img, err := idx.Image(d.Digest)
			if err != nil {
				return nil, err
			}
			b, err := imageBlobs(img)
			if err != nil {
				return nil, err
			}
			out = append(out, b...)
		}
	}
	return dedupe(out), nil
}

func imageBlobs(img v1.Image) ([]Blob, error) {
	m, err := img.Manifest()
	if err != nil {
		return nil, err
	}
	out := []Blob{{Digest: m.Config.Digest.String(), Size: m.Config.Size}}
	for _, l := range m.Layers {
		out = append(out, Blob{Digest: l.Digest.String(), Size: l.Size})
	}
	return dedupe(out), nil
}

func dedupe(bs []Blob) []Blob {
	seen := map[string]bool{}
	var out []Blob
	for _, b := range bs {
		if !seen[b.Digest] {
			seen[b.Digest] = true
			out = append(out, b)
		}
	}
	return out
}

// presentBlobs asks the destination which blobs it already has, with one
// authenticated transport for all of them (one ping, one token).
func presentBlobs(ctx context.Context, opt *options, dst name.Reference, blobs []Blob) (map[string]bool, error) {
	repo := dst.Context()
	client, err := opt.client(ctx, repo, repo.Scope(transport.PullScope))
	if err != nil {
		return nil, explain("check blobs at", dst, err)
	}
	out := map[string]bool{}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, b := range blobs {
		g.Go(func() error {
			ok, err := blobExists(gctx, client, repo, b.Digest)
			if err != nil {
				return explain("check blobs at", dst, err)
			}
			mu.Lock()
			out[b.Digest] = ok
			mu.Unlock()
			return nil
		})
	}
	return out, g.Wait()
}

// blobExists sends HEAD /v2/<repo>/blobs/<digest>.
func blobExists(ctx context.Context, client *http.Client, repo name.Repository, digest string) (bool, error) {
	u := fmt.Sprintf("%s://%s/v2/%s/blobs/%s", repo.Scheme(), repo.RegistryStr(), repo.RepositoryStr(), digest)
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, u, nil)
	if err != nil {
		return false, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return true, nil
	case http.StatusNotFound:
		return false, nil
	}
	return false, transport.CheckError(resp, http.StatusOK, http.StatusNotFound)
}

// transient says whether a request error is worth retrying: timeouts,
// connection resets and cut-off responses.
func transient(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	if te, ok := err.(interface{ Temporary() bool }); ok && te.Temporary() {
		return true // includes the retry transport's own status-code errors
	}
	var ne net.Error
	return (errors.As(err, &ne) && ne.Timeout()) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)
}
