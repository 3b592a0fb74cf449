package builder

import (
	"os"
	"strings"
	"testing"
)

// TestDocSyntaxLine keeps docs/build.md's "# syntax=" line the one the
// generated Dockerfiles carry.
func TestDocSyntaxLine(t *testing.T) {
	b, err := os.ReadFile("../docs/build.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	want := "`# syntax=" + DockerfileSyntax + "`"
	if !strings.Contains(doc, want) {
		t.Errorf("docs/build.md does not show %s", want)
	}
	for line := range strings.SplitSeq(doc, "\n") {
		for field := range strings.FieldsSeq(line) {
			i := strings.Index(field, "docker/dockerfile:")
			if i < 0 {
				continue
			}
			f := strings.TrimRight(field[i:], "`(),.")
			if f != DockerfileSyntax {
				t.Errorf("docs/build.md names %s; the generated Dockerfiles use %s", f, DockerfileSyntax)
			}
		}
	}
}
