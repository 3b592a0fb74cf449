package validate

import "testing"

func TestSamePublic(t *testing.T) {
	for _, c := range []struct {
		installed, want string
		same            bool
	}{
		{"2.7.1+cu128", "2.7.1", true},
		{"2.3", "2.3.0", true},
		{"2.15.0-1", "2.15.0.post1", true},
		{"2.15.0.post1", "2.15.0", false},
		{"2.7.1", "2.7.10", false},
		{"1!2.7.1", "2.7.1", false},
		{"2.7.1rc1", "2.7.1", false},
		{"not-a-version", "not-a-version", true},
	} {
		if got := samePublic(c.installed, c.want); got != c.same {
			t.Errorf("samePublic(%q, %q) = %v, want %v", c.installed, c.want, got, c.same)
		}
	}
}
