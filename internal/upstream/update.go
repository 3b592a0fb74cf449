package upstream

import (
	"context"
	"fmt"

	"github.com/gpuimg/gpuimg/matrix"
)

// Update reads the selected upstream sources and returns what they
// publish that db lacks. Nothing it could not read or verify becomes a
// row: a page or file that is not the format it should be is a
// *FormatError, metadata whose sha256 differs from the index page's is an
// *IntegrityError, both naming the URL, and the run stops there.
func Update(ctx context.Context, db *matrix.DB, opts ...Option) (*Overlay, error) {
	o, err := makeOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("matrix update: %w", err)
	}
	ov := &Overlay{Date: o.now().UTC().Format("2006-01-02")}
	for _, s := range o.sources {
		var err error
		switch s {
		case SourceTorch:
			err = o.updateTorch(ctx, db, ov)
		case SourceTorchPyPI:
			err = o.updateTorchPyPI(ctx, db, ov)
		case SourceJAX:
			err = o.updateJAX(ctx, db, ov)
		case SourceTensorFlow:
			err = o.updateTensorFlow(ctx, db, ov)
		case SourceCUDA:
			err = o.updateCUDA(ctx, db, ov)
		case SourceCuDNN:
			err = o.updateCuDNN(ctx, db, ov)
		case SourceNCCL:
			err = o.updateNCCL(ctx, db, ov)
		case SourceImages:
			err = o.updateImages(ctx, db, ov)
		}
		if err != nil {
			return nil, fmt.Errorf("read %s upstream: %w", s, err)
		}
	}
	return ov, nil
}
