package validate

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gpuimg/gpuimg/validate/gpuprobe"
)

// GPUReport turns a probe of image (run inside it) into a Report.
func GPUReport(image, digest string, p *gpuprobe.Result) *Report {
	return &Report{Kind: "gpu", Image: image, Digest: digest, Created: p.Created, Found: Found{Packages: map[string]string{}, Kernels: map[string]Kernels{}},
		Checks: p.Checks, Verdict: p.Verdict, Probe: p}
}

// ParseResult reads a probe result collected elsewhere: gpuimg probe -o
// json, or a GPU report (gpuimg validate --run … -o json), whose probe it
// returns with the report's image and digest.
func ParseResult(data []byte) (res *gpuprobe.Result, image, digest string, err error) {
	var rep Report
	if json.Unmarshal(data, &rep) == nil && rep.Kind != "" {
		if rep.Kind == gpuprobe.BaselineKind {
			return nil, "", "", errors.New("a baseline, not a probe result: give it with --baseline")
		}
		if rep.Probe == nil {
			return nil, "", "", fmt.Errorf("a %s report without a probe result: only GPU reports (gpuimg validate --run) and gpuimg probe -o json can be judged", rep.Kind)
		}
		return rep.Probe, rep.Image, rep.Digest, nil
	}
	var p gpuprobe.Result
	if err := json.Unmarshal(data, &p); err != nil || p.Verdict == "" {
		return nil, "", "", errors.New("not a probe result (gpuimg probe -o json) or a GPU report (gpuimg validate --run … -o json)")
	}
	return &p, "", "", nil
}

// JudgedInstance is one result of Judge.
type JudgedInstance struct {
	Name    string  `json:"name"` // the file it was read from
	Verdict string  `json:"verdict"`
	Report  *Report `json:"report"`
}

// Judgement is Judge's answer: reject when any instance is rejected.
type Judgement struct {
	Verdict   string           `json:"verdict"` // accept, reject
	Instances []JudgedInstance `json:"instances"`
}

// Judge judges probe results collected elsewhere (names and contents),
// each with gpuprobe.Rejudge and gpuprobe.Accept, without a GPU. A result that cannot be read is an
// error naming it.
func Judge(names []string, data [][]byte, opt gpuprobe.AcceptOptions) (*Judgement, error) {
	j := &Judgement{Verdict: "accept"}
	for i, name := range names {
		res, image, digest, err := ParseResult(data[i])
		if err != nil {
			return nil, fmt.Errorf("judge %s: %w", name, err)
		}
		gpuprobe.Rejudge(res, opt.DB)
		gpuprobe.Accept(res, opt)
		in := JudgedInstance{Name: name, Verdict: res.Acceptance.Verdict, Report: GPUReport(image, digest, res)}
		if in.Verdict != "accept" {
			j.Verdict = "reject"
		}
		j.Instances = append(j.Instances, in)
	}
	return j, nil
}
