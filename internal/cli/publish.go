package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/internal/publish"
	"github.com/gpuimg/gpuimg/matrix"
)

// PublishOptions are the flags of gpuimg publish.
type PublishOptions struct {
	File     string
	Builders []string
	Jobs     int
	Only     string
	Force    bool
	DryRun   bool
	// ReportDir receives report.json, report.md, junit.xml, report.html.
	ReportDir string
	// Since is a previous run's report.json, for what changed.
	Since    string
	Progress string
	// Output is the format on stdout: text (the summary) or json (the
	// report, as report.json holds it).
	Output string

	// The build settings every variant shares (builder.Flags, merged
	// with the environment and the publish file's build: by builder.Merge).
	builder.Flags
	BuilderOptions
	Registry RegistryOptions
}

func newPublishCmd() *cobra.Command {
	mo := &MatrixOptions{}
	o := &PublishOptions{}
	cmd := &cobra.Command{
		Use:   "publish -f publish.yaml",
		Short: "Build, validate, push, mirror and promote every variant of a publish file",
		Long: `publish expands a publish file (docs/publish.md) as "gpuimg matrix expand"
does and publishes every variant on a pool of BuildKit daemons:

  1. pin the base image by digest and compute the variant's inputs digest;
  2. skip it when its tag already holds an image with the same inputs
     (label dev.gpuimg.inputs) and a passing validation report: no build;
  3. otherwise build it and push it by digest only (no tag yet);
  4. validate the pushed image statically (the file's validate:) and
     attach the report to it;
  5. only if it passed: with signing: in the file, sign it and attach its
     reports and SBOM as signed statements (docs/supply-chain.md); then
     write the tag, copy it to the mirrors, move the promoted tags.

A failed variant leaves its tags untouched; the others go on. Variants that
share a base image and Python go to the same builder (its cache); a builder
that cannot be reached or dies mid-build has its variants retried on the
others.

Exit status: 0 when every variant was published or unchanged, 1 when any
failed (after all the others finished), 2 when the run could not start or
no builder could be reached for the variants that needed a build.`,
		Example: `  # Nightly: publish everything, write the report
  gpuimg publish -f publish.yaml --report-dir report --since last/report.json

  # A pool of three builders, two builds at a time on each
  gpuimg publish -f publish.yaml --builder tcp://buildkit-0:1234 --builder tcp://buildkit-1:1234 \
    --builder tcp://buildkit-2:1234 --jobs 2 --builder-tls-ca ca.pem --builder-tls-cert cert.pem --builder-tls-key key.pem

  # One variant (a CI job of "matrix expand -o github")
  gpuimg publish -f publish.yaml --only 2.7.1-cu128-py3.12

  # What would run
  gpuimg publish -f publish.yaml --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPublish(cmd, o, mo)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.File, "file", "f", "publish.yaml", "publish file (docs/publish.md)")
	fs.StringArrayVar(&o.Builders, "builder", nil, "BuildKit daemon of the pool (unix://, tcp://, docker-container://, kube-pod://; repeatable); overrides the file's builders:; default $BUILDKIT_HOST, else a local buildkitd gpuimg starts")
	fs.IntVar(&o.Jobs, "jobs", 1, "variants built at once on each builder")
	fs.StringVar(&o.Only, "only", "", "publish only the variant NAME, or those matching a glob ('2.7*')")
	fs.BoolVar(&o.Force, "force", false, "rebuild variants even when their tag holds the same inputs")
	fs.BoolVar(&o.DryRun, "dry-run", false, "plan only: list the variants, contact nothing")
	fs.StringVar(&o.ReportDir, "report-dir", "", "write report.json, report.md, junit.xml and report.html there")
	fs.StringVar(&o.Since, "since", "", "the report.json of a previous run: the report says what changed since")
	fs.StringVar(&o.Progress, "progress", "auto", "progress on stderr: auto (live on a terminal, else lines), plain (a line per event) or quiet")
	o.AddFlags(fs) // BuilderOptions': TLS and --state-dir
	fs.StringVar(&o.ContextDir, "context", ".", "directory build.copy and build.requirements paths are relative to")
	addMirrorFlags(fs, &o.Flags, &o.Registry)
	addCompressionFlag(fs, &o.Flags)
	addTorchCompileFlag(fs, &o.Flags)
	fs.StringArrayVar(&o.CacheFrom, "cache-from", nil, "cache import in BuildKit's syntax, shared by the pool: type=registry,ref=R (repeatable)")
	fs.StringArrayVar(&o.CacheTo, "cache-to", nil, "cache export in BuildKit's syntax: type=registry,ref=R,mode=max (repeatable)")
	fs.StringArrayVar(&o.Secrets, "secret", nil, "build secret id=ID,src=FILE or id=ID,env=VAR (repeatable)")
	fs.BoolVar(&o.NoCache, "no-cache", false, "rebuild every step")
	prov := fs.VarPF((*provenanceFlag)(&o.Provenance), "provenance", "",
		"ask BuildKit for SLSA v1 provenance (mode=max) of every variant, an attestation manifest in its index; with signing: in the file it is signed with the image (--provenance=URI sets the builder id)")
	prov.NoOptDefVal = builder.ProvenanceAuto
	fs.StringVar(&o.SourceDateEpoch, "source-date-epoch", "", "timestamp for reproducible output (default $SOURCE_DATE_EPOCH, else each base image's creation time)")
	mo.AddFlags(fs)
	outputFlag(fs, &o.Output, "output", "text", "json")
	return cmd
}

func runPublish(cmd *cobra.Command, o *PublishOptions, mo *MatrixOptions) error {
	if err := checkFormat(cmd.Flags()); err != nil {
		return err
	}
	f, db, since, err := o.load(mo)
	if err != nil {
		return err
	}
	opts, err := o.runOptions(cmd, f)
	if err != nil {
		return err
	}
	rep, err := publish.Run(cmd.Context(), f, db, opts)
	if errors.Is(err, publish.ErrNoBuilderReached) {
		return o.unreached(cmd.OutOrStdout(), chatter(cmd), rep, since, err)
	}
	if err != nil {
		return invalid(err, "fix the publish file or the flags (docs/publish.md)")
	}
	return o.render(cmd.OutOrStdout(), chatter(cmd), rep, since)
}

// unreached writes the report of a run that found no builder to reach
// and says so: the run could not run (exit 2), which is no verdict on
// the variants that needed a build.
func (o *PublishOptions) unreached(out, stderr io.Writer, rep *publish.Report, since *publish.Report, err error) error {
	if rerr := o.render(out, stderr, rep, since); rerr != nil {
		if e, ok := errors.AsType[*Error](rerr); !ok || e.Code != ExitFailed {
			return rerr
		}
	}
	return invalid(err, "start the builders or check that this machine reaches them (--builder, builders:, $BUILDKIT_HOST); nothing was built")
}

// load checks the flags and reads the publish file, the matrix and the
// --since report.
func (o *PublishOptions) load(mo *MatrixOptions) (*publish.File, *matrix.DB, *publish.Report, error) {
	if err := checkOutput(o.Progress, "auto", "plain", "quiet"); err != nil {
		return nil, nil, nil, err
	}
	if o.Jobs < 1 {
		return nil, nil, nil, invalid(fmt.Errorf("--jobs %d", o.Jobs), "give 1 or more")
	}
	f, err := publish.LoadFile(o.File)
	if err != nil && isDockerfile(o.File) {
		return nil, nil, nil, invalid(fmt.Errorf("-f %s: -f takes a publish file, and this is a Dockerfile", o.File), "write the matrix to publish as publish.yaml (docs/publish.md)")
	}
	if err != nil {
		return nil, nil, nil, invalid(err, "fix the publish file (format: docs/publish.md)")
	}
	var since *publish.Report
	if o.Since != "" {
		if since, err = publish.ReadReport(o.Since); err != nil {
			if _, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
				// In words, not Go's types ("Go value of type publish.Report").
				err = fmt.Errorf("read previous report %s: %s", o.Since, matrix.JSONProblem(err))
				return nil, nil, nil, invalid(err, "pass the report.json of an earlier gpuimg publish run")
			}
			return nil, nil, nil, invalid(err, "")
		}
	}
	db, err := mo.Load()
	if err != nil {
		return nil, nil, nil, err
	}
	return f, db, since, nil
}

// runOptions merges the shared build settings (flags > environment > the
// file's build:) and names the builders, progress and connection.
func (o *PublishOptions) runOptions(cmd *cobra.Command, f *publish.File) (publish.RunOptions, error) {
	fl := o.Flags
	fl.Given = func(key string) bool { return cmd.Flags().Changed(buildFlag(key)) }
	set, err := builder.Merge(fl, environment(), &builder.Config{Extras: f.Build, Platforms: f.Platforms})
	if err != nil {
		return publish.RunOptions{}, invalid(err, "")
	}
	req := set.Request
	if err := completeRequest(cmd.Context(), &req, o.Registry); err != nil {
		return publish.RunOptions{}, err
	}
	builders := o.Builders
	if len(builders) == 0 && len(f.Builders) == 0 && set.Builder != "" {
		builders = []string{set.Builder} // $BUILDKIT_HOST
	}
	opts := publish.RunOptions{
		Builders: builders, Jobs: o.Jobs, Only: o.Only, Force: o.Force, DryRun: o.DryRun, Request: req,
		Local:      o.local(req, o.Registry),
		ClientOpts: o.clientOpts(),
	}
	if stderr := cmd.ErrOrStderr(); o.Progress != "quiet" && !quiet(cmd) {
		opts.Progress = func(total int) *publish.Progress { return newPublishProgress(stderr, o.Progress, total) }
	}
	return opts, nil
}

// render writes the report files and the summary (with -o json the
// report on out, the summary on stderr); failed variants make the exit
// status 1.
func (o *PublishOptions) render(out, stderr io.Writer, rep *publish.Report, since *publish.Report) error {
	summary := out
	if o.Output == "json" {
		summary = stderr
	}
	if o.ReportDir != "" {
		if err := publish.WriteReports(o.ReportDir, rep, since); err != nil {
			return invalid(err, "check --report-dir is writable")
		}
		fmt.Fprintf(summary, "report: %s\n", filepath.Join(o.ReportDir, publish.ReportHTML))
	}
	if o.Output == "json" {
		r := *rep
		if since != nil {
			r.Changes = publish.DiffReports(since, rep)
		}
		if err := writeJSON(out, &r); err != nil {
			return err
		}
	}
	c := rep.Counts()
	fmt.Fprintln(summary, c.Summary())
	if c.Failed == 0 {
		return nil
	}
	var names []string
	for _, r := range rep.Results {
		if r.Outcome == publish.Failed {
			names = append(names, r.Variant.Name+" ("+r.Error+")")
		}
	}
	return &Error{Err: fmt.Errorf("%d of %s failed: %s", c.Failed, plural(c.Variants, "variant"), strings.Join(names, "; ")),
		Hint: failedHint(c), Code: ExitFailed}
}

// failedHint says what became of the variants that did not fail, and
// what to do next.
func failedHint(c publish.ReportCounts) string {
	var done []string
	if c.Published > 0 {
		done = append(done, fmt.Sprintf("%d published", c.Published))
	}
	if c.Unchanged > 0 {
		done = append(done, fmt.Sprintf("%d unchanged", c.Unchanged))
	}
	if c.Planned > 0 {
		done = append(done, fmt.Sprintf("%d planned", c.Planned))
	}
	if len(done) == 0 {
		return "nothing was published; fix the failures and run again"
	}
	return "of the others, " + strings.Join(done, ", ") + "; fix the failures and run again (unchanged variants are skipped)"
}

// plural is "1 variant", "3 variants".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// newPublishProgress is the live view on a terminal (auto), else lines.
func newPublishProgress(w io.Writer, mode string, total int) *publish.Progress {
	if f, ok := w.(*os.File); ok && mode == "auto" {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			width, _ := strconv.Atoi(os.Getenv("COLUMNS"))
			return publish.NewLiveProgress(w, total, width)
		}
	}
	return publish.NewProgress(w, total)
}
