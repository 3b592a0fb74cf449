package builder

import "testing"

// TestRewriteTimestampOnlyWithCopy: an image export rewrites timestamps
// only when the build has --copy files, whose COPY keeps the context's
// times; every other layer fixes its own (clampStep, fixTimes).
func TestRewriteTimestampOnlyWithCopy(t *testing.T) {
	for _, tc := range []struct {
		name string
		copy []string
		want string
	}{
		{"no copy", nil, ""},
		{"copy", []string{"app:/srv/app"}, "true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var req Request
			req.Tags = []string{"127.0.0.1:5000/a:b"}
			req.Extras.Copy = tc.copy
			b := &run{req: req}
			if err := b.exports(t.Context()); err != nil {
				t.Fatal(err)
			}
			if len(b.opt.Exports) != 1 {
				t.Fatalf("exports %+v", b.opt.Exports)
			}
			if got := b.opt.Exports[0].Attrs["rewrite-timestamp"]; got != tc.want {
				t.Errorf("rewrite-timestamp %q, want %q", got, tc.want)
			}
		})
	}
}
