// Package images opens, writes and moves images: references with skopeo's
// transport names (ParseRef, Open), base-image pinning through mirrors
// (PinBase), copies to many registries (Copy), export, recompression,
// listing, deletion, and validation reports as OCI referrers (Attach,
// Promote). It is the only package that talks to registries directly;
// every verb that does takes the same Option values (options.go).
package images
