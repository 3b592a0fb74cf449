package validate

import (
	"encoding/json"
	"fmt"

	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate/gpuprobe"
)

// PromotionPolicy is what an attached validation report must show for
// gpuimg images promote to move a tag onto the image.
type PromotionPolicy struct {
	// Require is "gpu" (a report from a run on a GPU, the default) or
	// "static" (a static report is enough).
	Require string
	// GPU, when set, is the card the report must be for: any name of the
	// same row of DB's GPU table (h100, H100-SXM, "NVIDIA H100 80GB HBM3").
	GPU string
	// MinDriver, when set, is the oldest driver the report may have been
	// recorded with.
	MinDriver matrix.Version
	DB        *matrix.DB
}

// Accept says whether a report (its JSON, and the GPU and driver it was
// attached with) allows promotion, and why or why not.
func (p PromotionPolicy) Accept(payload []byte, gpu, driver string) (bool, string) {
	var rep Report
	if err := json.Unmarshal(payload, &rep); err != nil || rep.Kind == "" {
		return false, "not a gpuimg report"
	}
	switch {
	case rep.Verdict != matrix.Pass:
		return false, fmt.Sprintf("%s report %s", rep.Kind, verdictWord(rep.Verdict))
	case p.Require != "static" && rep.Kind != "gpu":
		return false, fmt.Sprintf("%s report, a GPU report is required (or --require static)", rep.Kind)
	case p.GPU != "" && !gpuprobe.SameGPU(p.DB, gpu, p.GPU):
		return false, fmt.Sprintf("report for GPU %q, not %s", gpu, p.GPU)
	case !p.MinDriver.IsZero():
		v, err := matrix.ParseVersion(driver)
		if err != nil {
			return false, fmt.Sprintf("report records no driver, --min-driver %s needs one", p.MinDriver)
		}
		if v.Compare(p.MinDriver) < 0 {
			return false, fmt.Sprintf("report on driver %s, older than --min-driver %s", driver, p.MinDriver)
		}
	}
	return true, fmt.Sprintf("%s report passed on %s", rep.Kind, rep.Created.Format("2006-01-02"))
}

func verdictWord(v Status) string {
	switch v {
	case gpuprobe.NoGPU:
		return "found no GPU"
	case matrix.UnknownFact:
		return "is unknown (a check needs a fact the matrix lacks; see its unknown checks)"
	}
	return "failed"
}
