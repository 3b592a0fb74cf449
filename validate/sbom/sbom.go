package sbom

import (
	"fmt"
	"io"
	"time"

	"github.com/gpuimg/gpuimg/validate"
)

// Format is an SBOM format gpuimg writes.
type Format string

// The formats.
const (
	SPDXJSON      Format = "spdx-json"      // SPDX 2.3 JSON
	CycloneDXJSON Format = "cyclonedx-json" // CycloneDX 1.6 JSON
)

// Formats are the formats, in the order help lists them.
var Formats = []Format{SPDXJSON, CycloneDXJSON}

// ParseFormat reads a format's name.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown SBOM format %q: use spdx-json or cyclonedx-json", s)
}

// MediaType is the format's media type, which is also the artifact type
// of its OCI referrer: trivy's --sbom-sources oci reads exactly these.
func (f Format) MediaType() string {
	if f == CycloneDXJSON {
		return "application/vnd.cyclonedx+json"
	}
	return "application/spdx+json"
}

// PredicateType is the in-toto predicate type of an attestation that
// carries the SBOM (in-toto/attestation spec/predicates).
func (f Format) PredicateType() string {
	if f == CycloneDXJSON {
		return "https://cyclonedx.org/bom"
	}
	return "https://spdx.dev/Document"
}

// Write writes the SBOM of the image sub, whose inventory is inv, to w.
// The output depends only on its inputs: no clock is read (the creation
// time is the image's, or the Unix epoch when the image has none),
// identifiers are derived from the digest, and every list is sorted.
func Write(w io.Writer, f Format, sub Subject, inv *validate.Inventory) error {
	if inv == nil {
		return fmt.Errorf("sbom: no inventory (validate.Options.Inventory was off)")
	}
	comps := Components(sub, inv)
	created := inv.Created
	if created.IsZero() {
		created = time.Unix(0, 0)
	}
	switch f {
	case SPDXJSON:
		return writeSPDX(w, sub, comps, created.UTC())
	case CycloneDXJSON:
		return writeCycloneDX(w, sub, comps, inv.Created)
	}
	return fmt.Errorf("unknown SBOM format %q: use spdx-json or cyclonedx-json", f)
}
