package matrix

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// torchVersionPyCase is one fixture of testdata/torch-version-py.json,
// the table both sides of the torch/version.py rule are tested on (this
// test, and builder's TestVerifyPyTorchCUDALine for verify.py).
type torchVersionPyCase struct {
	Name, Text string
	Found      bool
	CUDA       string
}

func TestTorchCUDA(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "torch-version-py.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []torchVersionPyCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 5 {
		t.Fatalf("%d cases", len(cases))
	}
	for _, tt := range cases {
		cuda, found := TorchCUDA([]byte(tt.Text))
		if found != tt.Found || cuda != tt.CUDA {
			t.Errorf("%s: TorchCUDA = %q, %v; want %q, %v", tt.Name, cuda, found, tt.CUDA, tt.Found)
		}
	}
}
