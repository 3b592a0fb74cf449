package publish

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpuimg/gpuimg/internal/bound"
)

// TestExpandRefusesHugeProducts expands a 1.6 KiB publish file of 6 axes
// × 20 values (64 million combinations): it is refused before any is
// built or resolved, at once and naming the bound.
func TestExpandRefusesHugeProducts(t *testing.T) {
	var b strings.Builder
	b.WriteString("repository: r.example.com/t\ntag: \"{torch}-{python}\"\nmatrix:\n")
	for _, axis := range []string{"torch", "python", "cuda", "os", "gpu", "cudnn"} {
		vals := make([]string, 20)
		for i := range vals {
			vals[i] = fmt.Sprintf("\"%d.%d\"", 1+i/10, i%10)
		}
		fmt.Fprintf(&b, "  %s: [%s]\n", axis, strings.Join(vals, ", "))
	}
	f, err := parse(t, b.String())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = Expand(t.Context(), builtin(t), f, ExpandOptions{})
	if !errors.Is(err, bound.ErrBound) || !strings.Contains(err.Error(), "20×20×20×20×20×20 combinations") {
		t.Fatalf("got %v, want the bound on combinations", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s to refuse", took)
	}
}
