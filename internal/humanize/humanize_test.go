package humanize

import "testing"

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 88713216: "84.6 MiB", 1 << 40: "1.0 TiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
	for bps, want := range map[float64]string{1e9: "1 Gbit/s", 2e8: "200 Mbit/s", 5e3: "5000 bit/s"} {
		if got := Rate(bps); got != want {
			t.Errorf("Rate(%g) = %q, want %q", bps, got, want)
		}
	}
}
