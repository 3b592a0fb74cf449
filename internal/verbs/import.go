package verbs

import (
	"context"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
)

// Import imports the image src names into target t's registry as dst
// (images.Import: converted to the form t takes, the tag written last),
// after validating it in full with t (validate.TargetCheck: everything
// gpuimg validate --target checks, against db; a failed check refuses the
// push with images.ErrRefused and every reason, nothing pushed).
func Import(ctx context.Context, src string, t matrix.Target, dst string, db *matrix.DB, opts ...images.Option) (*images.ImportResult, error) {
	check := validate.TargetCheck(t, validate.Options{Name: src, DB: db})
	return images.Import(ctx, src, t, dst, check, opts...)
}
