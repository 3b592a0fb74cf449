package publish

import (
	"time"

	"github.com/gpuimg/gpuimg/images/sign"
	"github.com/gpuimg/gpuimg/matrix"
)

// Variant is one image of an expanded publish file: a resolved stack and
// the tag it is published under.
type Variant struct {
	// Name identifies the variant in reports, --only and CI job names: the
	// rendered tag without the repository ("2.7.1-cu128-py3.12").
	Name string `json:"name"`
	// Tag is the full reference the variant is published as
	// (repository:tag).
	Tag string `json:"tag"`
	// Axes are the matrix values that produced it (cuda, torch, python, …).
	Axes map[string]string `json:"axes"`
	// Stack is the resolver's pinned stack (its JSON is the stack label).
	Stack matrix.Stack `json:"stack"`
	// Inputs is the digest ("sha256:…") over everything that decides the
	// image's content; a published tag carrying the same Inputs and a
	// passing validation report is not rebuilt.
	Inputs string `json:"inputs"`
	// Validation, when set, says why the stack cannot pass the file's
	// validate: or a target at plan time ("torch 2.7.1 cu126 py3.12 would
	// fail validate (driver 535.104.05): require_cuda: …"): the variant
	// would be built and never tagged.
	Validation string `json:"validation,omitempty"`
}

// Skipped is a combination of the matrix that does not become a variant,
// with the resolver's (or the exclusion's) reason.
type Skipped struct {
	Axes   map[string]string `json:"axes"`
	Reason string            `json:"reason"`
}

// Plan is an expanded publish file.
type Plan struct {
	Repository string    `json:"repository"`
	Variants   []Variant `json:"variants"`
	Skipped    []Skipped `json:"skipped"`
}

// Outcome is what publishing did with one variant.
type Outcome string

// Outcomes.
const (
	// Published: built, validated, pushed, tagged (and mirrored, promoted).
	Published Outcome = "published"
	// Unchanged: the tag already holds an image with the same Inputs and a
	// passing report; nothing was built.
	Unchanged Outcome = "unchanged"
	// Failed: a step failed; the variant's previous tags are untouched.
	Failed Outcome = "failed"
	// Planned: --dry-run; nothing was done.
	Planned Outcome = "planned"
)

// Result is one variant's row of the report.
type Result struct {
	Variant Variant `json:"variant"`
	Outcome Outcome `json:"outcome"`
	// Digest is the pushed image's manifest (or index) digest.
	Digest string `json:"digest,omitempty"`
	// Size is the image's compressed size in bytes.
	Size int64 `json:"size,omitempty"`
	// Compression is the image's layer compression (zstd, gzip or
	// estargz): the one the variant is built with, which its inputs
	// digest records, so an unchanged variant has it too.
	Compression matrix.Compression `json:"compression,omitempty"`
	// Builder is the BuildKit address the variant was built on.
	Builder string `json:"builder,omitempty"`
	// BuildTime is how long the build took.
	BuildTime time.Duration `json:"build_time,omitempty"`
	// CachedSteps of TotalSteps were answered from the cache.
	CachedSteps int `json:"cached_steps,omitempty"`
	TotalSteps  int `json:"total_steps,omitempty"`
	// Verdict is the static validation's verdict (pass, fail).
	Verdict matrix.Status `json:"verdict,omitempty"`
	// Mirrors are the references the image was copied to.
	Mirrors []string `json:"mirrors,omitempty"`
	// Tags are the moving tags promoted to it; for a Planned variant (a
	// dry run), the ones it would move if it passes.
	Tags []string `json:"tags,omitempty"`
	// Targets are the provider fleets it was imported into.
	Targets []TargetResult `json:"targets,omitempty"`
	// Error says why the variant failed, naming the step.
	Error string `json:"error,omitempty"`
	// Signing is what signing: did for the variant: signed, verified,
	// failed or skipped, with what was signed and the key; nil when the
	// file has no signing: key.
	Signing *SignResult `json:"signing,omitempty"`
	// Notes are what happened on the way that did not fail the variant
	// (a builder that failed and the builder it was retried on).
	Notes []string `json:"notes,omitempty"`
	// Times are how long each step of the variant took.
	Times StepTimes `json:"times,omitzero"`
}

// SignStatus is what signing did for one variant.
type SignStatus string

// Signing statuses.
const (
	// SignSigned: this run signed the variant's digest and attached its
	// signed statements; its tag was written after.
	SignSigned SignStatus = "signed"
	// SignVerified: the variant was unchanged and its tag's evidence
	// (signing.require) verified with the key; nothing was signed anew.
	SignVerified SignStatus = "verified"
	// SignFailed: signing was attempted and failed (Reason says how); the
	// tag was not written, and what was attached before the failure is
	// listed.
	SignFailed SignStatus = "failed"
	// SignSkipped: signing is configured but was not attempted (Reason:
	// the variant failed before it, or --dry-run).
	SignSkipped SignStatus = "skipped"
)

// SignResult is the signing outcome of one variant (report.json's
// "signing"). It names the key by its reference and public key
// fingerprint only, never by secret material.
type SignResult struct {
	Status SignStatus `json:"status"`
	// Reason says why signing failed or was skipped, or what was
	// verified.
	Reason string `json:"reason,omitempty"`
	// Key identifies the signing key.
	Key SignKey `json:"key"`
	// Format is the signature format: bundle (cosign v3's referrer),
	// legacy (cosign v2's sha256-….sig tag) or both.
	Format sign.Format `json:"format"`
	// Signatures are the manifests signed: the image's (an index) and,
	// for a multi-platform image, each platform's.
	Signatures []SignedManifest `json:"signatures,omitempty"`
	// Attestations are the signed in-toto statements attached: the
	// validation test results, the SBOMs and BuildKit's provenance.
	Attestations []Attestation `json:"attestations,omitempty"`
	// SBOMs are the plain SBOM referrers' digests (what trivy reads).
	SBOMs []string `json:"sboms,omitempty"`
}

// SignKey identifies a signing key without its secret.
type SignKey struct {
	// Ref is signing.key as the file gives it: a key file's path,
	// env://VAR (the variable's name, not its value) or a KMS URI (its
	// user information and query removed).
	Ref string `json:"ref"`
	// Fingerprint is "sha256:" and the hex SHA-256 of the public key's
	// DER SubjectPublicKeyInfo; a bundle's publicKey hint is the base64
	// of the same digest. Empty when the key was not loaded (--dry-run).
	Fingerprint string `json:"fingerprint,omitempty"`
}

// SignedManifest is one manifest signed with cosign's sign statement.
type SignedManifest struct {
	Digest    string `json:"digest"`
	MediaType string `json:"media_type,omitempty"`
	// Referrer is the digest of the referrer manifest holding the bundle
	// (formats bundle and both).
	Referrer string `json:"referrer,omitempty"`
	// LegacyTag is the sha256-<hex>.sig tag written (legacy and both).
	LegacyTag string `json:"legacy_tag,omitempty"`
}

// AttestationKind is what a signed statement is evidence of, as gpuimg
// verify --require names it.
type AttestationKind string

// Attestation kinds.
const (
	AttestValidation AttestationKind = "validation"
	AttestSBOM       AttestationKind = "sbom"
	AttestProvenance AttestationKind = "provenance"
	// AttestOther is a predicate type none of the above.
	AttestOther AttestationKind = "other"
)

// Attestation is one signed statement attached to Subject.
type Attestation struct {
	Kind          AttestationKind `json:"kind"`
	Subject       string          `json:"subject"`
	PredicateType string          `json:"predicate_type"`
	// Referrer is the digest of the referrer manifest holding the bundle.
	Referrer string `json:"referrer"`
}

// Count is how many statements of kind k are attached.
func (s *SignResult) Count(k AttestationKind) int {
	n := 0
	for _, a := range s.Attestations {
		if a.Kind == k {
			n++
		}
	}
	return n
}

// StepTimes are the wall times of a variant's steps (nanoseconds in
// JSON), to see where a run's time goes: Check pins the base, computes the
// inputs and reads the tag; Wait is the time queued for a builder; Build
// is the solve (the push by digest included); Validate reads the pushed
// image and attaches the reports; Publish writes the tag, the mirrors and
// the moving tags. A step that did not run is zero.
type StepTimes struct {
	Check    time.Duration `json:"check,omitempty"`
	Wait     time.Duration `json:"wait,omitempty"`
	Build    time.Duration `json:"build,omitempty"`
	Validate time.Duration `json:"validate,omitempty"`
	Publish  time.Duration `json:"publish,omitempty"`
}

// Report is a publish run's result: written as report.json, report.md,
// junit.xml and report.html.
type Report struct {
	Repository string    `json:"repository"`
	Started    time.Time `json:"started"`
	Finished   time.Time `json:"finished"`
	Results    []Result  `json:"results"`
	Skipped    []Skipped `json:"skipped"`
	// Changes is what changed since the previous run. WriteReports fills
	// it in the files it writes when it is given the previous report
	// (--since); it is informative and never read back for a diff.
	Changes *Changes `json:"changes,omitempty"`
}

// ChangeKind says how a variant differs from the previous run.
type ChangeKind string

// Change kinds.
const (
	// ChangeAdded: a variant the previous run did not have.
	ChangeAdded ChangeKind = "added"
	// ChangeRemoved: a variant of the previous run this run does not have.
	ChangeRemoved ChangeKind = "removed"
	// ChangeDigest: the variant's image digest moved (From, To: digests).
	ChangeDigest ChangeKind = "digest"
	// ChangeOutcome: the variant's outcome changed (From, To: outcomes).
	ChangeOutcome ChangeKind = "outcome"
)

// Change is one difference between a run and the previous one.
type Change struct {
	// Name is the variant's Name.
	Name string     `json:"name"`
	Kind ChangeKind `json:"kind"`
	// From and To are the previous and the current value (a digest or an
	// outcome); empty for added and removed variants.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// Changes is what changed between a previous run and this one.
type Changes struct {
	// Since is when the previous run started.
	Since time.Time `json:"since"`
	// List holds the changes: added, removed, then per variant in the
	// current run's order a digest change and an outcome change.
	List []Change `json:"list"`
}

// TargetResult is one variant imported for one target (images import),
// or refused by it.
type TargetResult struct {
	Target string `json:"target"`
	// Ref is REPOSITORY@DIGEST, what to paste into the provider (empty
	// when refused).
	Ref    string `json:"ref,omitempty"`
	Digest string `json:"digest,omitempty"`
	// Changes are what the conversion changed (none: byte for byte).
	Changes []matrix.Change `json:"changes,omitempty"`
	// Verdict and Checks are the target's checks as the import ran them
	// (validate --target's target:NAME:WHAT checks); fail: refused,
	// nothing pushed to the target.
	Verdict matrix.Status    `json:"verdict,omitempty"`
	Checks  []matrix.Finding `json:"checks,omitempty"`
}
