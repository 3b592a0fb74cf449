package publish

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/buildkit/client"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/internal/bound"
	"github.com/gpuimg/gpuimg/internal/verbs"
	"github.com/gpuimg/gpuimg/matrix"
)

// RunOptions are a publish run's settings beyond the publish file.
type RunOptions struct {
	// Builders are BuildKit addresses; they override the file's builders:.
	// With neither, Local is started and used.
	Builders []string
	// Local is the local buildkitd used when no builder is named.
	Local *builder.Local
	// ClientOpts are BuildKit client options for the named builders (TLS
	// settings and so on).
	ClientOpts []client.ClientOpt
	// Dial gives the Builder at an address; default: the BuildKit daemon
	// there (verbs.DialBuilder: Local's, held in use until the run ends,
	// or dialled with ClientOpts). A test gives its own to run the
	// scheduling, validation and publication without a daemon.
	Dial func(ctx context.Context, addr string) (Builder, error)
	// Jobs is how many variants build at once on each builder (default 1).
	Jobs int
	// Only keeps the variants whose name equals it or matches it as a
	// glob (path.Match); empty keeps all.
	Only string
	// Force rebuilds variants whose tag already holds the same inputs.
	Force bool
	// DryRun plans only: every variant is Planned, nothing is contacted.
	DryRun bool
	// Request holds the build settings every variant shares: registry
	// mirrors, registry options (Registry, also used to check, validate,
	// tag, copy and promote), pip index, cache import and export, secrets,
	// the context directory, SourceDateEpoch, NoCache. Run sets the stack,
	// the extras and platforms (from the file) and the output.
	Request builder.Request
	// Progress makes the run's progress display for total variants
	// (NewProgress, NewLiveProgress); Run keeps it ticking and writes its
	// closing line. Nil writes nothing.
	Progress func(total int) *Progress
	// Now stamps the report; default time.Now.
	Now func() time.Time
}

// Run publishes a publish file: it expands it with db, and for each
// variant (in parallel, on the pool of builders) pins the base image,
// computes the inputs digest and, unless the tag already holds an image
// with the same inputs and a passing validation report, builds it and
// pushes it by digest only, validates the pushed image statically
// (f.Validate), attaches the report, and only if it passed writes the tag,
// copies it to the mirrors and moves the promoted tags. A failed variant
// leaves its tags as they were; the others go on. The report has a
// result per variant (Failed ones say which step failed).
//
// Errors are for a run that cannot start (a file that does not expand,
// --only matching nothing); failed variants are in the report. When
// variants needed a build and no builder of the pool could be reached,
// Run returns the report (those variants failed, the unchanged ones
// done) and an error wrapping ErrNoBuilderReached: the run could not
// run, which is not a verdict on the variants.
func Run(ctx context.Context, f *File, db *matrix.DB, opts RunOptions) (*Report, error) {
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	plan, err := Expand(ctx, db, f, ExpandOptions{})
	if err != nil {
		return nil, err
	}
	variants := plan.Variants
	if opts.Only != "" {
		if _, err := path.Match(opts.Only, ""); err != nil {
			return nil, fmt.Errorf("variant pattern %q: %w; give a variant name or a glob like '2.7*-py3.12'", opts.Only, err)
		}
		variants = slices.DeleteFunc(slices.Clone(variants), func(v Variant) bool {
			ok, _ := path.Match(opts.Only, v.Name)
			return v.Name != opts.Only && !ok
		})
		if len(variants) == 0 {
			return nil, fmt.Errorf("variant pattern %q matches no variant of %s; list them with gpuimg matrix expand -f %s", opts.Only, f.name(), f.name())
		}
	}
	rep := &Report{Repository: f.Repository, Started: now().UTC(), Results: make([]Result, len(variants)), Skipped: plan.Skipped}
	r := &runner{f: f, db: db, opts: opts, variants: variants, rep: rep, caches: cacheGroups(plan.Variants)}
	if opts.Progress != nil {
		r.progress = opts.Progress(len(variants))
		pctx, stop := context.WithCancelCause(ctx)
		defer stop(errors.New("publish run finished"))
		go r.progress.Run(pctx)
		defer func() { r.progress.Finish(rep) }()
	}
	if err := r.promotions(plan.Variants); err != nil {
		return nil, err
	}
	if opts.DryRun {
		if f.Signing.Enabled() {
			r.key, _ = signKey(f.Signing.Key, nil) // a key reference alone cannot fail
		}
		for i, v := range variants {
			// The moving tags the variant would take if it passes.
			rep.Results[i] = Result{Variant: v, Outcome: Planned, Tags: r.promotedRefs(v.Name)}
		}
		r.finishSigning()
		for i := range variants {
			r.done(i)
		}
		rep.Finished = now().UTC()
		return rep, nil
	}
	if err := r.loadSigner(); err != nil {
		return nil, err
	}
	// Check every variant first: the unchanged ones need no builder.
	r.prepared = make([]*builder.Plan, len(variants))
	r.checked = make([]time.Time, len(variants))
	var todo []task
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range variants {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if r.check(ctx, i) {
				mu.Lock()
				todo = append(todo, task{id: i, key: groupKey(variants[i])})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	var buildErr error
	if len(todo) > 0 {
		sort.Slice(todo, func(a, b int) bool { return todo[a].id < todo[b].id })
		buildErr = r.build(ctx, todo)
	}
	r.finishSigning()
	rep.Finished = now().UTC()
	return rep, buildErr
}

// ErrNoBuilderReached is wrapped by Run's error when variants needed a
// build and not one builder of the pool could be connected to.
var ErrNoBuilderReached = errors.New("no builder of the pool could be reached")

// Builder is one builder of the pool as Run uses it: it builds a
// variant's plan, says after a failed build whether it still answers
// (when it does not, the variant is retried on another builder), and is
// closed when the run ends.
type Builder interface {
	verbs.Daemon
	Close() error
}

var _ Builder = (*verbs.Builder)(nil)

// runner is one Run's state.
type runner struct {
	f        *File
	db       *matrix.DB
	opts     RunOptions
	variants []Variant
	rep      *Report
	// prepared holds each variant's build plan (base pinned, inputs
	// label set) once checked.
	prepared []*builder.Plan
	// checked is when each variant's check ended (its wait for a builder
	// starts then).
	checked  []time.Time
	progress *Progress
	// promote maps a variant's name to the moving tags it owns.
	promote map[string][]string
	// caches maps a variant's name to the variants whose registry caches
	// it imports (cacheGroups).
	caches map[string][]string
	// cacheTags lists each cache repository's tags once (cacheExists).
	cacheTags tagLists
	// finishing runs the validation and publication of built variants
	// while their builders go on to the next build; finishSlots bounds how
	// many run at once.
	finishing   sync.WaitGroup
	finishSlots chan struct{}
	// signer signs what is published (the file's signing:); nil: nothing
	// is signed. require is what an unchanged tag must carry.
	signer  signature.SignerVerifier
	require []verbs.Evidence
	// key identifies signing.key in the reports.
	key SignKey
}

func (r *runner) registry() []images.Option { return r.opts.Request.Registry }

func (r *runner) event(i int, format string, args ...any) {
	if r.progress != nil {
		r.progress.Event(r.variants[i], fmt.Sprintf(format, args...))
	}
}

// done reports variant i's result; each variant's result is written by
// one goroutine only.
func (r *runner) done(i int) {
	if r.progress != nil {
		r.progress.Done(r.rep.Results[i])
	}
}

func (r *runner) fail(i int, step string, err error) {
	res := &r.rep.Results[i]
	res.Variant, res.Outcome, res.Error = r.variants[i], Failed, step+": "+err.Error()
	r.done(i)
}

// promotions renders the moving tags and gives each to the last variant
// of the whole plan (before --only) that renders it: one writer per tag,
// whatever order the builds end in, and the same one when CI jobs each
// publish one variant with --only. When that variant fails (or is not
// published by this run), the tag stays where it was.
func (r *runner) promotions(all []Variant) error {
	owner := map[string]string{}
	for _, v := range all {
		for _, t := range r.f.Promote.Tags {
			tag, err := t.Render(Fields(v.Stack, v.Axes))
			if err != nil {
				return fmt.Errorf("%s:%d: promote tag for %s: %w", r.f.name(), t.Line, v.Name, err)
			}
			if err := CheckTag(tag); err != nil {
				return fmt.Errorf("%s:%d: promote tag template %s renders %w", r.f.name(), t.Line, bound.Quote(t.Text), err)
			}
			owner[tag] = v.Name
		}
	}
	r.promote = map[string][]string{}
	for tag, n := range owner {
		r.promote[n] = append(r.promote[n], tag)
	}
	for n := range r.promote {
		slices.Sort(r.promote[n])
	}
	return nil
}

// promotedRefs are the moving tags variant name owns (promotions), as
// full references.
func (r *runner) promotedRefs(name string) []string {
	var out []string
	for _, t := range r.promote[name] {
		out = append(out, r.f.Repository+":"+t)
	}
	return out
}

// check pins variant i's base, computes its inputs and says whether it
// needs a build; an unchanged variant is finished here (mirrors and
// promoted tags brought up to date, so an interrupted run resumes).
func (r *runner) check(ctx context.Context, i int) bool {
	start := time.Now()
	defer func() {
		r.checked[i] = time.Now()
		r.rep.Results[i].Times.Check = r.checked[i].Sub(start)
	}()
	v := &r.variants[i]
	req := r.request(*v, nil)
	plan, err := verbs.Prepare(ctx, req)
	if err != nil {
		r.fail(i, "pin base image", err)
		return false
	}
	files, err := fileDigests(req.ContextDir, r.f.Build)
	if err != nil {
		r.fail(i, "read build files", err)
		return false
	}
	v.Inputs, err = Inputs(v.Stack, r.f, ExpandOptions{Bases: map[string]images.Base{v.Stack.BaseImage: plan.Base}, Files: files, SourceDateEpoch: plan.SourceDateEpoch, Compression: req.Compression, LargeWheel: req.LargeWheel, NoTorchCompile: req.NoTorchCompile})
	if err != nil {
		r.fail(i, "inputs", err)
		return false
	}
	plan.Labels[InputsLabel] = v.Inputs
	r.prepared[i] = plan
	res := &r.rep.Results[i]
	res.Variant, res.Compression = *v, builder.ImageCompression(req.Compression)
	if r.opts.Force {
		return true
	}
	r.event(i, "checking %s", v.Tag)
	digest, rp, ok := r.unchanged(ctx, *v)
	if !ok {
		return true
	}
	res.Outcome, res.Digest, res.Verdict, res.Size = Unchanged, digest, rp.Verdict, rp.Size.Compressed
	if r.signer != nil && len(r.require) > 0 {
		res.Signing = r.signResult(SignVerified, "the tag's "+evidenceList(r.require)+" verified with the key; nothing signed anew", nil)
	}
	if err := r.publish(ctx, i, digest, false); err != nil {
		res.Outcome = Failed
	}
	r.done(i)
	return false
}

// request is variant v's build request: the shared settings with v's
// stack, the file's extras and platforms, no tags; has says which
// registry caches exist (variantCaches; nil: none known).
func (r *runner) request(v Variant, has func(entry client.CacheOptionsEntry) bool) builder.Request {
	req := r.opts.Request
	req.Stack, req.Extras, req.Platforms = v.Stack, r.f.Build, r.f.Platforms
	req.Tags, req.Push = nil, false
	group := r.caches[v.Name]
	if len(group) == 0 {
		group = []string{v.Name}
	}
	req.CacheFrom, req.CacheTo = variantCaches(req.CacheFrom, req.CacheTo, group, has)
	return req
}

// cacheExists says whether a type=registry cache entry's ref (R:T)
// exists, by listing R's tags: once per repository in a run, given at
// most cacheListTimeout, over plain HTTP when the entry says
// registry.insecure=true. When the registry cannot say, it does not (the
// variant then imports its group's caches, which costs nothing when they
// are missing too).
func (r *runner) cacheExists(ctx context.Context) func(entry client.CacheOptionsEntry) bool {
	return func(entry client.CacheOptionsEntry) bool {
		ref, ok := registryCacheRef(entry)
		repo, tag := splitCacheTag(ref)
		if !ok || tag == "" {
			return false
		}
		insecure := cacheInsecure(entry)
		tags, err := r.cacheTags.get(repo+"|"+strconv.FormatBool(insecure), func() ([]string, error) {
			ctx, cancel := context.WithTimeout(ctx, cacheListTimeout)
			defer cancel()
			opts := slices.Clone(r.registry())
			if insecure {
				opts = append(opts, images.WithInsecure(true))
			}
			return images.Tags(ctx, repo, opts...)
		})
		return err == nil && slices.Contains(tags, tag)
	}
}

// cacheListTimeout bounds the listing of a cache repository's tags: a
// registry that does not answer delays no build by more.
const cacheListTimeout = 10 * time.Second

// tagLists holds one tag listing per key for a run: the first caller
// lists, the others wait for its answer.
type tagLists struct {
	mu sync.Mutex
	m  map[string]*tagList
}

type tagList struct {
	once sync.Once
	tags []string
	err  error
}

func (l *tagLists) get(key string, list func() ([]string, error)) ([]string, error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*tagList{}
	}
	t := l.m[key]
	if t == nil {
		t = &tagList{}
		l.m[key] = t
	}
	l.mu.Unlock()
	t.once.Do(func() { t.tags, t.err = list() })
	return t.tags, t.err
}

// build runs the variants that need it on the pool. It returns an error
// wrapping ErrNoBuilderReached when no builder could be connected to.
func (r *runner) build(ctx context.Context, todo []task) error {
	addrs := r.opts.Builders
	if len(addrs) == 0 {
		addrs = r.f.Builders
	}
	local := len(addrs) == 0
	if local {
		if r.opts.Local == nil {
			err := fmt.Errorf("%w: none is named (name one on the command line or in the builders: list)", ErrNoBuilderReached)
			for _, t := range todo {
				r.fail(t.id, "build", err)
			}
			return err
		}
		addrs = []string{r.opts.Local.Address()}
	}
	dial := r.opts.Dial
	if dial == nil {
		dial = func(ctx context.Context, addr string) (Builder, error) {
			if local {
				addr = "" // the local one, started or reused
			}
			b, err := verbs.DialBuilder(ctx, addr, r.opts.Local, r.opts.ClientOpts...)
			if err != nil {
				return nil, err // not a nil *verbs.Builder in the interface
			}
			return b, nil
		}
	}
	clients := make([]Builder, len(addrs))
	conns := make([]sync.Once, len(addrs))
	connErr := make([]error, len(addrs))
	defer func() {
		for _, c := range clients {
			if c != nil {
				_ = c.Close()
			}
		}
	}()
	s := &scheduler{
		builders: addrs,
		jobs:     r.opts.Jobs,
		run: func(ctx context.Context, b, id int) error {
			conns[b].Do(func() { clients[b], connErr[b] = dial(ctx, addrs[b]) })
			if connErr[b] != nil {
				return &BuilderError{Addr: addrs[b], Err: connErr[b]}
			}
			return r.buildOne(ctx, id, addrs[b], clients[b])
		},
		retried: func(id, from, to int, err error) {
			if be, ok := errors.AsType[*BuilderError](err); ok {
				err = be.Err
			}
			r.event(id, "builder %s failed (%v), retrying on %s", addrs[from], err, addrs[to])
			res := &r.rep.Results[id]
			res.Notes = append(res.Notes, fmt.Sprintf("builder %s failed, retried on %s: %v", addrs[from], addrs[to], err))
		},
		fail: func(id int, err error) { r.fail(id, "build", err) },
	}
	r.finishSlots = make(chan struct{}, len(addrs)*max(r.opts.Jobs, 1))
	s.schedule(ctx, todo)
	r.finishing.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return unreached(addrs, clients, connErr)
}

// unreached is ErrNoBuilderReached with each builder's reason when none
// of addrs was connected to (clients, after the run), else nil.
func unreached(addrs []string, clients []Builder, connErr []error) error {
	var why []string
	for b, addr := range addrs {
		if clients[b] != nil {
			return nil
		}
		if connErr[b] != nil {
			why = append(why, fmt.Sprintf("%s: %v", addr, connErr[b]))
		}
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("%w (%s)", ErrNoBuilderReached, strings.Join(why, "; "))
}

// buildOne builds variant i on a builder and pushes it by digest; then,
// while the builder goes on to its next variant, the image is validated
// and published (finish). It returns a *BuilderError when the builder
// failed (the scheduler retries elsewhere); every other failure is
// recorded.
func (r *runner) buildOne(ctx context.Context, i int, addr string, c Builder) error {
	start := time.Now()
	v := r.variants[i]
	res := &r.rep.Results[i]
	res.Variant, res.Builder = v, addr
	res.Times.Wait = start.Sub(r.checked[i])
	req := r.request(v, r.cacheExists(ctx))
	req.PushByDigest = r.f.Repository
	req.Annotations = map[string]string{InputsLabel: v.Inputs}
	r.event(i, "building on %s", addr)
	built, err := verbs.Build(ctx, c, req, verbs.WithPlan(r.prepared[i]))
	res.Times.Build = time.Since(start)
	if ve, ok := errors.AsType[*verbs.Error](err); ok && ve.Step == verbs.Lost {
		return &BuilderError{Addr: addr, Err: ve.Err}
	}
	if err != nil {
		r.fail(i, "build", err)
		return nil
	}
	res.Digest, res.BuildTime = built.Digest, built.Duration
	res.CachedSteps, res.TotalSteps = built.CachedSteps, built.TotalSteps
	r.finishing.Go(func() {
		select {
		case r.finishSlots <- struct{}{}:
			defer func() { <-r.finishSlots }()
		case <-ctx.Done():
		}
		r.finish(ctx, i, built.Digest)
	})
	return nil
}

// finish validates variant i's pushed image and, only if it passed,
// publishes it (tag, mirrors, moving tags).
func (r *runner) finish(ctx context.Context, i int, digest string) {
	v := r.variants[i]
	res := &r.rep.Results[i]
	digestRef := r.f.Repository + "@" + digest
	start := time.Now()
	r.event(i, "validating %s", digest)
	verdict, size, reps, err := r.validate(ctx, v, digestRef)
	res.Verdict, res.Size = verdict, size
	res.Times.Validate = time.Since(start)
	if err != nil {
		r.fail(i, "validate", err)
		return
	}
	// Unknown (a fact the matrix lacks) does not stop the tag; validate:
	// strict: true makes it, and warnings, fail the verdict.
	if verdict != matrix.Pass && verdict != matrix.Warn && verdict != matrix.UnknownFact {
		r.fail(i, "validate", fmt.Errorf("static validation %s (the report is attached to %s); the tag was not written", verdict, digestRef))
		return
	}
	start = time.Now()
	if r.signer != nil {
		r.event(i, "signing %s", digest)
		signed, err := verbs.SignImage(ctx, digestRef, reps, verbs.SignSpec{
			Signer: r.signer, Format: r.f.Signing.Format(), SBOM: r.f.Signing.SBOMFormat(), Name: v.Tag, Registry: r.registry(),
		})
		if err != nil {
			res.Signing = r.signResult(SignFailed, err.Error(), signed)
			res.Times.Publish = time.Since(start)
			r.fail(i, "sign", fmt.Errorf("%w; the tag was not written", err))
			return
		}
		res.Signing = r.signResult(SignSigned, "", signed)
	}
	err = r.publish(ctx, i, digest, true)
	res.Times.Publish = time.Since(start)
	if err == nil {
		res.Outcome = Published
	} else {
		res.Outcome = Failed
	}
	r.done(i)
}

// fileDigests digests the files the extras read (the requirements file,
// the copy sources, files or whole directories), relative to dir.
func fileDigests(dir string, e builder.Extras) (map[string]string, error) {
	srcs := sourcesOf(e)
	if len(srcs) == 0 {
		return nil, nil
	}
	if dir == "" {
		dir = "."
	}
	out := map[string]string{}
	for _, src := range srcs {
		p := src
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		h := sha256.New()
		err := filepath.WalkDir(p, func(fp string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(p, fp)
			info, err := d.Info()
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%s\x00%o\x00", filepath.ToSlash(rel), info.Mode())
			if d.Type().IsRegular() {
				fh, err := os.Open(fp)
				if err != nil {
					return err
				}
				_, err = io.Copy(h, fh)
				fh.Close()
				return err
			}
			if d.Type()&fs.ModeSymlink != 0 {
				t, err := os.Readlink(fp)
				if err != nil {
					return err
				}
				fmt.Fprintf(h, "%s\x00", t)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("digest %s: %w", src, err)
		}
		out[src] = "sha256:" + hex.EncodeToString(h.Sum(nil))
	}
	return out, nil
}
