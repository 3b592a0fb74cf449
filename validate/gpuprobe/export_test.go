package gpuprobe

// The fixtures of the internal tests, for the external ones
// (judge_report_test.go), which import validate.
var (
	TestDB      = db
	Must        = must
	H200x8      = h200x8
	OneLinkDown = oneLinkDown
	CheckNamed  = checkNamed
)
