package publish

import (
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/images/sign"
	"github.com/gpuimg/gpuimg/internal/verbs"
)

// signedFixture is a report of one variant with the signing outcome sg
// (nil: the file has no signing:), published unless sg failed.
func signedFixture(sg *SignResult) *Report {
	r := reportFixture()
	r.Results = r.Results[:1]
	r.Skipped = nil
	r.Results[0].Signing = sg
	if sg != nil && sg.Status == SignFailed {
		r.Results[0].Outcome, r.Results[0].Error = Failed, "sign: "+sg.Reason+"; the tag was not written"
	}
	return r
}

const (
	testFingerprint = "sha256:" + "5e" + "0f1c2d3b4a5968778695a4b3c2d1e0f1c2d3b4a5968778695a4b3c2d1e0f1c2d3b"
	testDigest      = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

func signedOutcome() *SignResult {
	return &SignResult{
		Status: SignSigned, Key: SignKey{Ref: "/keys/cosign.key", Fingerprint: testFingerprint}, Format: sign.FormatBundle,
		Signatures: []SignedManifest{{Digest: testDigest, MediaType: "application/vnd.oci.image.index.v1+json", Referrer: "sha256:" + strings.Repeat("a1", 32)}},
		Attestations: []Attestation{
			{Kind: AttestValidation, Subject: testDigest, PredicateType: verbs.PredicateTestResult, Referrer: "sha256:" + strings.Repeat("b2", 32)},
			{Kind: AttestValidation, Subject: testDigest, PredicateType: verbs.PredicateTestResult, Referrer: "sha256:" + strings.Repeat("b3", 32)},
			{Kind: AttestSBOM, Subject: testDigest, PredicateType: verbs.PredicateSPDX, Referrer: "sha256:" + strings.Repeat("c3", 32)},
			{Kind: AttestProvenance, Subject: testDigest, PredicateType: sign.SLSAProvenanceV1, Referrer: "sha256:" + strings.Repeat("d4", 32)},
		},
		SBOMs: []string{"sha256:" + strings.Repeat("e5", 32)},
	}
}

// TestReportSigning: each report says each variant's signing outcome:
// report.json under "signing" with its documented field names, report.md
// and report.html in a Signing section (none without signing:), junit.xml
// in a "VARIANT signing" test case that passes when signed or verified,
// fails when signing failed and is skipped when not configured or not
// attempted. The key is named by reference and fingerprint only.
func TestReportSigning(t *testing.T) {
	failed := &SignResult{Status: SignFailed, Reason: "sign registry.example.com/ml/torch@" + testDigest + ": PUT referrer: 403 denied",
		Key: SignKey{Ref: "awskms:///alias/gpuimg", Fingerprint: testFingerprint}, Format: sign.FormatLegacy,
		Signatures: []SignedManifest{{Digest: testDigest, LegacyTag: "sha256-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.sig"}}}
	skipped := &SignResult{Status: SignSkipped, Reason: "the variant failed at validate before signing; nothing signed", Key: SignKey{Ref: "env://COSIGN_KEY"}, Format: sign.FormatBundle}
	verified := &SignResult{Status: SignVerified, Reason: "the tag's signature, sbom and validation verified with the key; nothing signed anew", Key: SignKey{Ref: "/keys/cosign.key", Fingerprint: testFingerprint}, Format: sign.FormatBoth}
	for _, tc := range []struct {
		name string
		sg   *SignResult
		// json are substrings of report.json; md and html of the others
		// (none: no Signing section).
		json, md, html []string
		// junit is the signing case's state: pass, fail, skip; out is in
		// its system-out or skipped/failure message.
		junit, junitText string
	}{{
		name: "signed", sg: signedOutcome(),
		json: []string{`"signing": {`, `"status": "signed"`, `"key": {`, `"ref": "/keys/cosign.key"`, `"fingerprint": "` + testFingerprint + `"`, `"format": "bundle"`,
			`"signatures": [`, `"media_type": "application/vnd.oci.image.index.v1+json"`, `"referrer": "sha256:a1a1`, `"kind": "provenance"`, `"predicate_type": "https://slsa.dev/provenance/v1"`, `"sboms": [`},
		md: []string{"### Signing\n\n| Variant | Signing | Signed | Attested | SBOM referrers | Key, format | Reason |\n",
			"| 2.7.1-cu128-py3.12 | 🔏 signed | 1 manifest | 2 validation, 1 sbom, 1 provenance | 1 SBOM | /keys/cosign.key (sha256:5e0f1c2d3b4a), bundle |  |\n"},
		html: []string{`<section id="signing">`, `<tr class="signing signed" data-variant="2.7.1-cu128-py3.12">`, `<span class="badge signed">signed</span>`,
			`<td>2 validation, 1 sbom, 1 provenance</td>`, `title="` + testFingerprint + `">/keys/cosign.key (sha256:5e0f1c2d3b4a)</td>`,
			`<tr><th>Attested provenance</th><td class="mono">https://slsa.dev/provenance/v1 of ` + testDigest},
		junit: "pass", junitText: "signed " + testDigest + " (referrer sha256:a1a1",
	}, {
		name: "verified", sg: verified,
		json:  []string{`"status": "verified"`, `"format": "both"`},
		md:    []string{"| 2.7.1-cu128-py3.12 | ✅ verified |  |  | 0 SBOMs | /keys/cosign.key (sha256:5e0f1c2d3b4a), both | the tag's signature, sbom and validation verified with the key; nothing signed anew |\n"},
		html:  []string{`<tr class="signing verified"`},
		junit: "pass", junitText: "signing: verified\nkey: /keys/cosign.key\nkey fingerprint: " + testFingerprint + "\nformat: both\n",
	}, {
		name: "unsigned", sg: nil,
		junit: "skip", junitText: "signing not configured",
	}, {
		name: "failed", sg: failed,
		json:  []string{`"status": "failed"`, `"reason": "sign registry.example.com/ml/torch@` + testDigest + `: PUT referrer: 403 denied"`, `"ref": "awskms:///alias/gpuimg"`, `"legacy_tag": "sha256-0123`},
		md:    []string{"| 2.7.1-cu128-py3.12 | ❌ failed | 1 manifest |  | 0 SBOMs | awskms:///alias/gpuimg (sha256:5e0f1c2d3b4a), legacy | sign registry.example.com/ml/torch@" + testDigest + ": PUT referrer: 403 denied |\n"},
		html:  []string{`<tr class="signing failed"`, `<span class="badge failed">failed</span>`, `<td>legacy</td>`},
		junit: "fail", junitText: "signing failed: sign registry.example.com/ml/torch@" + testDigest + ": PUT referrer: 403 denied",
	}, {
		name: "skipped", sg: skipped,
		json:  []string{`"status": "skipped"`, `"ref": "env://COSIGN_KEY"`},
		md:    []string{"| 2.7.1-cu128-py3.12 | ⏭️ skipped |  |  | 0 SBOMs | env://COSIGN\\_KEY, bundle | the variant failed at validate before signing; nothing signed |\n"},
		html:  []string{`<tr class="signing skipped"`, `<td class="mono ref" title="">env://COSIGN_KEY</td>`},
		junit: "skip", junitText: "the variant failed at validate before signing; nothing signed",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := signedFixture(tc.sg)
			js := renderReportString(t, writeReportJSON, r)
			for _, w := range tc.json {
				if !strings.Contains(js, w) {
					t.Errorf("report.json lacks %q:\n%s", w, js)
				}
			}
			if tc.sg == nil && strings.Contains(js, `"signing"`) {
				t.Errorf("report.json has a signing outcome without signing:\n%s", js)
			}
			var back Report
			if err := json.Unmarshal([]byte(js), &back); err != nil {
				t.Fatal(err)
			}
			if got := back.Results[0].Signing; (got == nil) != (tc.sg == nil) || got != nil && (got.Status != tc.sg.Status || got.Key != tc.sg.Key || len(got.Attestations) != len(tc.sg.Attestations)) {
				t.Errorf("report.json round trip: signing %+v, want %+v", got, tc.sg)
			}

			md := renderReportString(t, writeReportMarkdown, r)
			for _, w := range tc.md {
				if !strings.Contains(md, w) {
					t.Errorf("report.md lacks %q:\n%s", w, md)
				}
			}
			if (len(tc.md) == 0) == strings.Contains(md, "### Signing") {
				t.Errorf("report.md: Signing section present %v, want %v:\n%s", strings.Contains(md, "### Signing"), len(tc.md) > 0, md)
			}

			page := renderReportString(t, writeReportHTML, r)
			for _, w := range tc.html {
				if !strings.Contains(page, w) {
					t.Errorf("report.html lacks %q", w)
				}
			}
			if (len(tc.html) == 0) == strings.Contains(page, `id="signing"`) {
				t.Errorf("report.html: Signing section present %v, want %v", strings.Contains(page, `id="signing"`), len(tc.html) > 0)
			}

			out := renderReportString(t, writeReportJUnit, r)
			var doc junitDoc
			if err := xml.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("junit.xml does not parse: %v\n%s", err, out)
			}
			s := doc.Suites[0]
			if len(s.Cases) != 2 || *s.Tests != 2 {
				t.Fatalf("%d test cases (tests=%d), want the variant's and its signing's:\n%s", len(s.Cases), *s.Tests, out)
			}
			c := s.Cases[1]
			if *c.Name != "2.7.1-cu128-py3.12 signing" || c.Class != "gpuimg.publish.signing" {
				t.Errorf("signing test case %q class %q", *c.Name, c.Class)
			}
			state, text := "pass", c.Out
			switch {
			case c.Failure != nil:
				state, text = "fail", c.Failure.Message
			case c.Skipped != nil:
				state, text = "skip", c.Skipped.Message+"\n"+c.Out
			}
			if state != tc.junit || !strings.Contains(text, tc.junitText) {
				t.Errorf("signing test case: %s %q, want %s containing %q\n%s", state, text, tc.junit, tc.junitText, out)
			}
			wantFail, wantSkip := 0, 0
			switch tc.junit {
			case "fail":
				wantFail = 2 // the variant failed at sign, and its signing
			case "skip":
				wantSkip = 1
			}
			if *s.Failures != wantFail || *s.Skipped != wantSkip {
				t.Errorf("suite failures/skipped %d/%d, want %d/%d", *s.Failures, *s.Skipped, wantFail, wantSkip)
			}
		})
	}
}

// TestSignKey: signing.key is named without secrets: a URL's user
// information and query are dropped; the fingerprint is the SHA-256 of
// the DER public key.
func TestSignKey(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/keys/cosign.key", "/keys/cosign.key"},
		{"env://COSIGN_KEY", "env://COSIGN_KEY"},
		{"awskms:///arn:aws:kms:us-east-1:123456789012:key/abc", "awskms:///arn:aws:kms:us-east-1:123456789012:key/abc"},
		{"hashivault://user:s3cret@vault.example/transit?token=hvs.x", "hashivault://vault.example/transit"},
	} {
		k, err := signKey(tc.in, nil)
		if err != nil || k.Ref != tc.want || k.Fingerprint != "" {
			t.Errorf("signKey(%q) = %+v, %v; want ref %q, no fingerprint", tc.in, k, err, tc.want)
		}
	}
}

// TestRunDryRunSigning: --dry-run loads no key and signs nothing; with
// signing: each planned variant says so, naming the key without a
// fingerprint, and without signing: there is no signing outcome.
func TestRunDryRunSigning(t *testing.T) {
	for _, key := range []string{"", "env://GPUIMG_TEST_UNSET_KEY"} {
		f, err := parse(t, strings.ReplaceAll(runFile, "REPO", "registry.example.com/ml/torch"))
		if err != nil {
			t.Fatal(err)
		}
		f.Signing.Key = key
		rep, err := Run(t.Context(), f, builtin(t), RunOptions{DryRun: true})
		if err != nil {
			t.Fatalf("key %q: %v", key, err)
		}
		for _, res := range rep.Results {
			sg := res.Signing
			switch {
			case key == "" && sg != nil:
				t.Errorf("no signing:, %s has signing %+v", res.Variant.Name, sg)
			case key != "" && (sg == nil || sg.Status != SignSkipped || sg.Reason != "dry run: nothing signed" || sg.Key != SignKey{Ref: key} || sg.Format != sign.FormatBundle):
				t.Errorf("dry run with signing:, %s has signing %+v; want skipped, dry run, key %s", res.Variant.Name, sg, key)
			}
		}
	}
}
