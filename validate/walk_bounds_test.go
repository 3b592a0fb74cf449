package validate

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpuimg/gpuimg/internal/bound"
)

// TestWalkPathBounds walks layers of names too long, too deep, or too
// many bytes together: each is refused at once, naming the bound.
func TestWalkPathBounds(t *testing.T) {
	deep := strings.Repeat("d/", 2000) + "f"
	long := strings.Repeat("x", 5000)
	var many []file
	for i := range 300 {
		many = append(many, file{fmt.Sprintf("%s%d", strings.Repeat("n", 4000), i), ""})
	}
	for _, tc := range []struct {
		name string
		img  func() []file
		lim  Limits
		want string
	}{
		{"2,000 directories deep", func() []file { return []file{{deep, "x"}} }, Limits{}, "2000 directories deep"},
		{"a name of 5,000 bytes", func() []file { return []file{{long, "x"}} }, Limits{}, "an entry name of 5000 bytes"},
		{"1 MiB of names over a bound of 1 MiB", func() []file { return many }, Limits{MaxTotalPathBytes: 1 << 20}, "more than 1 MiB of names"},
		{"within the bounds", func() []file { return []file{{strings.Repeat("d/", 500) + "f", "x"}} }, Limits{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := image(t, layer(t, tc.img()...))
			start := time.Now()
			_, _, err := walkAll(t, img, tc.lim)
			if time.Since(start) > 5*time.Second {
				t.Errorf("took %s", time.Since(start))
			}
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, bound.ErrBound) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}
