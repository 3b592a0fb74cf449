package validate

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate/gpuprobe"
)

func TestPromotionPolicy(t *testing.T) {
	db := db(t)
	report := func(kind string, v Status) []byte {
		b, err := json.Marshal(Report{Kind: kind, Verdict: v, Created: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	gpuPass, staticPass := report("gpu", matrix.Pass), report("static", matrix.Pass)
	for _, tt := range []struct {
		name        string
		policy      PromotionPolicy
		payload     []byte
		gpu, driver string
		ok          bool
		why         string
	}{
		{"GPU report passes by default", PromotionPolicy{}, gpuPass, "NVIDIA H200", "580.95.05", true, "gpu report passed on 2026-11-30"},
		{"static report needs --require static", PromotionPolicy{}, staticPass, "", "", false, "a GPU report is required"},
		{"static allowed", PromotionPolicy{Require: "static"}, staticPass, "", "", true, "static report passed"},
		{"failed", PromotionPolicy{Require: "static"}, report("static", matrix.Fail), "", "", false, "static report failed"},
		{"no GPU where it ran", PromotionPolicy{}, report("gpu", gpuprobe.NoGPU), "", "", false, "gpu report found no GPU"},
		{"not a report", PromotionPolicy{}, []byte(`{"hello":1}`), "", "", false, "not a gpuimg report"},
		{"same card by NVML name", PromotionPolicy{GPU: "h100"}, gpuPass, "NVIDIA H100 80GB HBM3", "550.54.14", true, ""},
		{"another board of the family", PromotionPolicy{GPU: "h100"}, gpuPass, "NVIDIA H100 PCIe", "550.54.14", false, `report for GPU "NVIDIA H100 PCIe", not h100`},
		{"driver new enough", PromotionPolicy{MinDriver: matrix.MustVersion("550")}, gpuPass, "", "550.54.14", true, ""},
		{"driver too old", PromotionPolicy{MinDriver: matrix.MustVersion("555.42")}, gpuPass, "", "550.54.14", false, "report on driver 550.54.14, older than --min-driver 555.42"},
		{"driver not recorded", PromotionPolicy{MinDriver: matrix.MustVersion("550")}, gpuPass, "", "", false, "records no driver"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.policy.DB = db
			ok, why := tt.policy.Accept(tt.payload, tt.gpu, tt.driver)
			if ok != tt.ok || !strings.Contains(why, tt.why) {
				t.Errorf("Accept = %v %q, want %v %q", ok, why, tt.ok, tt.why)
			}
		})
	}
}
