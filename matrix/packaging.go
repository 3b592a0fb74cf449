package matrix

import (
	"fmt"
	"slices"
	"strings"
)

// Manifest media types a target's rules name. They are the registries'
// wire names; matrix keeps its own copies so it imports no image library.
const (
	MediaDockerManifest = "application/vnd.docker.distribution.manifest.v2+json"
	MediaDockerList     = "application/vnd.docker.distribution.manifest.list.v2+json"
	MediaOCIManifest    = "application/vnd.oci.image.manifest.v1+json"
	MediaOCIIndex       = "application/vnd.oci.image.index.v1+json"
)

// Packaging is how an image is wrapped, as a registry or an archive holds
// it: the part of an image a target's manifest, index, compression,
// platform and size rules read. The images package describes it; what is
// inside the layers is validate's.
type Packaging struct {
	// MediaType is the top-level manifest's: an index's, or the image's.
	MediaType string `json:"media_type"`
	// Index says the top level is an image index or manifest list.
	Index bool `json:"index"`
	// Platforms are the platforms of the index's images (attestation
	// manifests left out), or the one image's.
	Platforms []string `json:"platforms"`
	// Attestations counts the attestation manifests in the index
	// (BuildKit provenance and SBOM).
	Attestations int `json:"attestations,omitempty"`
	// Platform is the platform of the image described below: the one a
	// target runs (Target.Platform), else the first.
	Platform string `json:"platform"`
	// ImageMediaType is that image's manifest media type.
	ImageMediaType string `json:"image_media_type"`
	// Compressions are the distinct compressions of its layers.
	Compressions []Compression `json:"compressions"`
	// Compressed is the sum of its layers' sizes as stored.
	Compressed int64 `json:"compressed"`
}

// FormatOf names the family of a manifest media type: docker, oci, or ""
// for anything else.
func FormatOf(mediaType string) ManifestFormat {
	switch {
	case strings.HasPrefix(mediaType, "application/vnd.oci."):
		return FormatOCI
	case strings.HasPrefix(mediaType, "application/vnd.docker."):
		return FormatDocker
	}
	return ""
}

// CompressionOf names the compression of a layer media type (Docker's or
// OCI's). eStargz layers are gzip on the wire and read as gzip.
func CompressionOf(mediaType string) Compression {
	switch {
	case strings.HasSuffix(mediaType, "+zstd") || strings.HasSuffix(mediaType, ".zstd"):
		return CompressionZstd
	case strings.HasSuffix(mediaType, "+gzip") || strings.HasSuffix(mediaType, ".gzip") || strings.HasSuffix(mediaType, "tar.gzip"):
		return CompressionGzip
	case strings.HasSuffix(mediaType, ".tar") || strings.HasSuffix(mediaType, "layer.v1.tar"):
		return CompressionUncompressed
	}
	return ""
}

// platformRuns says whether an image built for platform img runs on a
// host of platform host (os/arch[/variant]); a host without a variant
// runs every variant of its architecture.
func platformRuns(img, host string) bool {
	io, ia, _ := strings.Cut(img, "/")
	ho, ha, _ := strings.Cut(host, "/")
	iarch, ivar, _ := strings.Cut(ia, "/")
	harch, hvar, _ := strings.Cut(ha, "/")
	return io == ho && iarch == harch && (hvar == "" || hvar == ivar)
}

// Platform is the platform of the image the target would run, out of the
// image's platforms: the first of the target's platforms the image has
// (the target's order is its preference). ok is false when the image has
// none of them; a target without platforms takes linux/amd64 if offered,
// else the first.
func (t Target) Platform(platforms []string) (string, bool) {
	if len(platforms) == 0 {
		return "", false
	}
	if len(t.Platforms) == 0 {
		for _, p := range platforms {
			if platformRuns(p, "linux/amd64") {
				return p, true
			}
		}
		return platforms[0], true
	}
	for _, h := range t.Platforms {
		for _, p := range platforms {
			if platformRuns(p, h) {
				return p, true
			}
		}
	}
	return "", false
}

// name prefixes a check name with the target's: target:sagemaker/p5:driver.
func (t Target) check(name string) string { return "target:" + t.Name + ":" + name }

// unconfirmed marks a fact the target row could not confirm.
func (t Target) unconfirmed(key string) string {
	if slices.Contains(t.Unconfirmed, key) {
		return " (unconfirmed fact of the target row)"
	}
	return ""
}

// importFix is the fix for what images import converts.
func (t Target) importFix() string {
	return fmt.Sprintf("gpuimg images import IMAGE --target %s --to REF converts it", t.Name)
}

// CheckPackaging judges how an image is wrapped against the target: the
// platform, the manifest format, an index, attestation manifests and the
// layer compressions. Each finding is named target:NAME:WHAT and its
// message says how to fix it. Size is CheckSize's.
func (t Target) CheckPackaging(p Packaging) []Finding {
	var out []Finding
	add := func(name string, st Status, format string, args ...any) {
		out = append(out, Finding{Name: t.check(name), Status: st, Message: t.Name + ": " + fmt.Sprintf(format, args...)})
	}
	if len(t.Platforms) > 0 {
		if pl, ok := t.Platform(p.Platforms); ok {
			add("platform", Pass, "the image has %s, which the fleet runs", pl)
		} else {
			add("platform", Fail, "the image is %s only; the fleet runs %s%s: rebuild for %s (gpuimg build --platform %s, docker buildx build --platform %s)",
				strings.Join(p.Platforms, ", "), strings.Join(t.Platforms, ", "), t.unconfirmed("platforms"), t.Platforms[0], t.Platforms[0], t.Platforms[0])
		}
	}
	switch {
	case p.Index && !t.Index:
		add("index", Fail, "the image is an index (%s: %s); the provider takes a single image manifest%s: %s, picking %s", p.MediaType, strings.Join(p.Platforms, ", "), t.unconfirmed("index"), t.importFix(), orAny(t.Platforms))
	case p.Index:
		add("index", Pass, "an index is accepted")
	}
	switch {
	case p.Attestations > 0 && !t.Attestations:
		add("attestations", Fail, "the index holds %d attestation manifests (provenance/SBOM), which the provider rejects%s: %s, or build with --provenance=false --sbom=false", p.Attestations, t.unconfirmed("attestations"), t.importFix())
	case p.Attestations > 0:
		add("attestations", Pass, "attestation manifests are accepted")
	}
	if len(t.MediaTypes) > 0 {
		f := FormatOf(p.ImageMediaType)
		if slices.Contains(t.MediaTypes, f) {
			add("media-type", Pass, "%s is accepted", p.ImageMediaType)
		} else {
			add("media-type", Fail, "unsupported manifest media type %s; the provider takes %s%s: %s (or build with --output type=docker)", p.ImageMediaType, formats(t.MediaTypes), t.unconfirmed("media_types"), t.importFix())
		}
	}
	if bad := t.badCompressions(p); len(bad) > 0 {
		add("compression", Fail, "layers are %s; the provider takes %s%s: %s", joinC(bad), t.acceptedCompressions(p), t.unconfirmed("compressions"), t.importFix())
	} else if len(p.Compressions) > 0 {
		add("compression", Pass, "layers are %s", joinC(p.Compressions))
	}
	return out
}

// acceptedCompressions are the target's, or what its format can carry:
// Docker schema 2 has no zstd layer type.
func (t Target) acceptedCompressions(p Packaging) string {
	acc := t.Compressions
	if len(acc) == 0 && t.format(p) == FormatDocker {
		acc = []Compression{CompressionGzip, CompressionUncompressed}
	}
	if len(acc) == 0 {
		return "any"
	}
	return joinC(acc)
}

// badCompressions are the layer compressions the target does not take.
func (t Target) badCompressions(p Packaging) []Compression {
	var bad []Compression
	for _, c := range p.Compressions {
		switch {
		case len(t.Compressions) > 0 && !slices.Contains(t.Compressions, c):
			bad = append(bad, c)
		case c == CompressionZstd && t.format(p) == FormatDocker:
			bad = append(bad, c) // Docker schema 2 has no zstd layer media type
		}
	}
	return bad
}

// format is the manifest format the image will have for the target: its
// own if accepted, else the target's first.
func (t Target) format(p Packaging) ManifestFormat {
	f := FormatOf(p.ImageMediaType)
	if len(t.MediaTypes) == 0 || slices.Contains(t.MediaTypes, f) {
		return f
	}
	return t.MediaTypes[0]
}

// CheckSize judges an image's size against the target's limit: the
// compressed layers (as pushed) or the unpacked filesystem, per SizeOf.
// ok is false when the target has no limit.
func (t Target) CheckSize(compressed, uncompressed int64) (Finding, bool) {
	if t.MaxSize <= 0 {
		return Finding{}, false
	}
	got := compressed
	if t.SizeOf == "uncompressed" {
		got = uncompressed
	}
	f := Finding{Name: t.check("size"), Status: Pass, Message: fmt.Sprintf("%s: %s %s, within the limit of %s%s", t.Name, Size(got), t.SizeOf, t.MaxSize, t.unconfirmed("max_size"))}
	if got > int64(t.MaxSize) {
		f.Status = Fail
		f.Message = fmt.Sprintf("%s: the image is %s %s; the provider takes at most %s%s: make it smaller (a runtime flavor instead of devel, fewer packages; gpuimg validate lists the largest layers)", t.Name, Size(got), t.SizeOf, t.MaxSize, t.unconfirmed("max_size"))
	}
	return f, true
}

// Change is one thing images import changes for a target.
type Change struct {
	// What: platform, attestations, media-type or compression.
	What string `json:"what"`
	From string `json:"from"`
	To   string `json:"to"`
}

// Conversion is what an image needs to be acceptable to a target, as far
// as its wrapping goes, and the wrapping it then has. Changes empty means
// the image is pushed byte for byte (its digest kept).
type Conversion struct {
	Changes []Change  `json:"changes"`
	After   Packaging `json:"after"`
	// Platform, when set, is the image to take out of the index; the
	// index itself is not pushed.
	Platform string `json:"platform,omitempty"`
	// DropAttestations drops the attestation manifests of a kept index.
	DropAttestations bool `json:"drop_attestations,omitempty"`
	// Format is the manifest format to write.
	Format ManifestFormat `json:"format"`
	// Recompress are the layer compressions the target does not take;
	// layers in them are recompressed to Compression.
	Recompress  []Compression `json:"recompress,omitempty"`
	Compression Compression   `json:"compression,omitempty"`
}

// Convert plans what images import changes so the target accepts p:
// pick the target's platform out of an index it does not take, drop
// attestation manifests it rejects, switch OCI and Docker schema 2 media
// types, recompress layers to a compression it takes (gzip by
// preference). What no conversion fixes (a platform the image lacks, its
// size, what is inside) is left for CheckPackaging, CheckSize and
// validate to refuse.
func (t Target) Convert(p Packaging) Conversion {
	c := Conversion{After: p}
	a := &c.After
	a.Platforms = slices.Clone(p.Platforms)
	a.Compressions = slices.Clone(p.Compressions)
	if p.Index && !t.Index {
		// Without the target's platform the import is refused
		// (CheckPackaging's platform finding); the plan still takes the
		// image described, so that is the only reason given.
		if pl, ok := t.Platform(p.Platforms); ok || p.Platform != "" {
			if !ok {
				pl = p.Platform
			}
			from := "index of " + strings.Join(p.Platforms, ", ")
			if p.Attestations > 0 {
				from += fmt.Sprintf(" with %d attestation manifests", p.Attestations)
			}
			c.Changes = append(c.Changes, Change{What: "platform", From: from, To: "the " + pl + " image alone"})
			c.Platform = pl
			a.Index, a.Platforms, a.Attestations, a.MediaType = false, []string{pl}, 0, p.ImageMediaType
		}
	} else if p.Attestations > 0 && !t.Attestations {
		c.Changes = append(c.Changes, Change{What: "attestations", From: fmt.Sprintf("%d attestation manifests", p.Attestations), To: "dropped"})
		c.DropAttestations = true
		a.Attestations = 0
	}
	c.Format = t.format(p)
	if f := FormatOf(p.ImageMediaType); c.Format != f && c.Format != "" {
		im, ix := MediaOCIManifest, MediaOCIIndex
		if c.Format == FormatDocker {
			im, ix = MediaDockerManifest, MediaDockerList
		}
		c.Changes = append(c.Changes, Change{What: "media-type", From: p.ImageMediaType, To: im})
		a.ImageMediaType = im
		if a.Index {
			a.MediaType = ix
		} else {
			a.MediaType = im
		}
	}
	if bad := t.badCompressions(p); len(bad) > 0 {
		to := CompressionGzip
		if len(t.Compressions) > 0 && !slices.Contains(t.Compressions, CompressionGzip) {
			to = t.Compressions[0]
		}
		c.Compression, c.Recompress = to, bad
		c.Changes = append(c.Changes, Change{What: "compression", From: joinC(bad), To: string(to)})
		var after []Compression
		for _, x := range p.Compressions {
			if slices.Contains(bad, x) {
				x = to
			}
			if !slices.Contains(after, x) {
				after = append(after, x)
			}
		}
		a.Compressions = after
	}
	return c
}

func joinC(cs []Compression) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

func formats(fs []ManifestFormat) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = map[ManifestFormat]string{FormatDocker: "Docker schema 2", FormatOCI: "OCI"}[f]
	}
	return strings.Join(s, " or ")
}

func orAny(ps []string) string {
	if len(ps) == 0 {
		return "linux/amd64"
	}
	return ps[0]
}
