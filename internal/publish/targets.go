package publish

import (
	"context"
	"fmt"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/internal/verbs"
	"github.com/gpuimg/gpuimg/matrix"
)

// importTargets imports variant i (at digestRef) into every target of the
// file with verbs.Import: validated in full with the target
// (everything validate --target checks), converted to the form it accepts, pushed to its repository. It runs
// before the variant's own tag is written, so a target that refuses the
// variant fails it with its tags as they were; targets imported before the
// refusal stay imported.
func (r *runner) importTargets(ctx context.Context, i int, digestRef string) error {
	v := r.variants[i]
	res := &r.rep.Results[i]
	for _, ts := range r.f.Targets {
		t, err := ts.Fleet(r.db)
		if err == nil {
			var dst string
			if dst, err = ts.Ref(v); err == nil {
				r.event(i, "importing for %s to %s", t.Name, dst)
				var ir *images.ImportResult
				ir, err = verbs.Import(ctx, digestRef, t, dst, r.db, r.registry()...)
				if ir != nil && (err == nil || ir.Verdict == matrix.Fail) { // pushed, or refused: the checks say why
					res.Targets = append(res.Targets, TargetResult{Target: t.Name, Ref: ir.Ref, Digest: ir.Digest, Changes: ir.Changes, Verdict: ir.Verdict, Checks: ir.Checks})
				}
			}
		}
		if err != nil {
			res.Error = fmt.Sprintf("target %s: %v", ts.Target, err)
			return err
		}
	}
	return nil
}
