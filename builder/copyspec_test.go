package builder

import (
	"strings"
	"testing"
)

// TestParseCopySpec is the table of the one SRC:DST reader: the split
// at the first colon, and each refusal with the copy quoted.
func TestParseCopySpec(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    CopySpec
		wantErr string
	}{
		{in: "src:/app/src", want: CopySpec{Src: "src", Dst: "/app/src"}},
		{in: "train.py:/app/train.py", want: CopySpec{Src: "train.py", Dst: "/app/train.py"}},
		{in: "a:/b:c", want: CopySpec{Src: "a", Dst: "/b:c"}}, // the first colon splits
		{in: "..data:/x", want: CopySpec{Src: "..data", Dst: "/x"}},
		{in: "a/..b:/app/..b", want: CopySpec{Src: "a/..b", Dst: "/app/..b"}},
		{in: "./dir/:/opt/dir/", want: CopySpec{Src: "./dir/", Dst: "/opt/dir/"}},
		{in: "src", wantErr: `copy "src": want SRC:DST`},
		{in: ":/x", wantErr: `copy ":/x": want SRC:DST`},
		{in: "src:", wantErr: `copy "src:": want SRC:DST`},
		{in: "src:app", wantErr: `copy "src:app": the destination must be an absolute path in the image`},
		{in: "app.py:/app/../etc/cron.d/app", wantErr: `the destination must not contain ".."`},
		{in: "app.py:/app/..", wantErr: `the destination must not contain ".."`},
		{in: "../secret:/x", wantErr: `copy "../secret:/x": the source must be inside the context directory`},
		{in: "/etc/passwd:/x", wantErr: "the source must be inside the context directory"},
		{in: "a/../../x:/x", wantErr: "the source must be inside the context directory"},
	} {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseCopySpec(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseCopySpec(%q) = %v, %v; want error %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseCopySpec(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
			if got.String() != tt.in {
				t.Errorf("String() = %q, want %q back", got.String(), tt.in)
			}
		})
	}
}
