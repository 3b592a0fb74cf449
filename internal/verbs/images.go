package verbs

import (
	"context"
	"slices"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
)

// withLinkCheck adds the one layer check images' writing verbs run
// (images.WithLayerCheck): validate.RefuseLinkEscapes, so export, convert
// and import refuse what validate's unsafe-paths check fails, hard links
// and names written through earlier symlinks included, nothing written.
func withLinkCheck(opts []images.Option) []images.Option {
	return append(slices.Clip(opts), images.WithLayerCheck(validate.RefuseLinkEscapes))
}

// Export is images.Export with the link check: an image whose layers
// would escape the root when extracted is refused (validate.ErrUnsafePaths).
func Export(ctx context.Context, src, dest string, format images.Format, opts ...images.Option) (*images.ExportResult, error) {
	return images.Export(ctx, src, dest, format, withLinkCheck(opts)...)
}

// Convert is images.Convert with the link check, as Export.
func Convert(ctx context.Context, src, dst string, comp matrix.Compression, opts ...images.Option) (*images.ConvertResult, error) {
	return images.Convert(ctx, src, dst, comp, withLinkCheck(opts)...)
}
