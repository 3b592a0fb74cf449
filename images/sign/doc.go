// Package sign signs images and attaches signed in-toto statements to them
// in cosign v3's registry layout, and verifies them offline with a public
// key through sigstore-go.
//
// What it writes, for each manifest signed (an index and each of its
// platform manifests):
//
//   - an in-toto v1 Statement whose one subject is the manifest's sha256
//     digest, DSSE-signed (payload type application/vnd.in-toto+json) and
//     wrapped in a Sigstore bundle v0.3 whose verification material is the
//     key's hint (base64 of the SHA-256 of its DER public key, as cosign
//     writes it);
//   - pushed as an OCI 1.1 referrer: artifactType and the one layer's media
//     type application/vnd.dev.sigstore.bundle.v0.3+json, config the OCI
//     empty descriptor, subject the signed manifest, annotations
//     dev.sigstore.bundle.predicateType and dev.sigstore.bundle.content:
//     dsse-envelope. Registries without the Referrers API get
//     go-containerregistry's sha256-<hex> tag index instead;
//   - with FormatLegacy or FormatBoth, cosign v2's sha256-<hex>.sig tag as
//     well: a simple-signing payload per layer, its signature in the
//     dev.cosignproject.cosign/signature annotation.
//
// Sign writes cosign's own predicate (https://sigstore.dev/cosign/sign/v1,
// an empty predicate); Attest writes any predicate (an SBOM, provenance,
// a test result). Verify finds both kinds, and legacy signatures, and
// reports which statements verify with the key, by predicate type.
//
// It reaches registries through images.Remote, so it takes the same
// images.Options (keychain, insecure registries, CA file, retries) as every
// registry verb of gpuimg.
package sign
