package redact

import (
	"bytes"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"mirror https://u:PASSWORD@mirror.example.com for docker.io", "mirror https://u:xxxxx@mirror.example.com for docker.io"},
		{"pip http://ci:s3cr3t@127.0.0.1:8080/simple and https://a:b@c/d", "pip http://ci:xxxxx@127.0.0.1:8080/simple and https://a:xxxxx@c/d"},
		{"no password: https://git@github.com/o/r and docker.io/nvidia/cuda:12.4@sha256:abc", "no password: https://git@github.com/o/r and docker.io/nvidia/cuda:12.4@sha256:abc"},
	}
	for _, tt := range tests {
		if got := URLs(tt.in); got != tt.want {
			t.Errorf("URLs(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	secrets := Passwords([]string{"build", "--registry-mirror", "docker.io=https://u:PASSWORD@mirror", "--x=http://a:ab@h"})
	if strings.Join(secrets, ",") != "PASSWORD" {
		t.Fatalf("Passwords = %v", secrets)
	}
	var out bytes.Buffer
	w := NewWriter(&out, secrets)
	// A message that took the URL apart, written in pieces that cut the
	// password, then a last line without its newline.
	for _, p := range []string{"could not parse reference: u:PASS", "WORD@mirror/nvidia/cuda\n", "tail PASSWORD"} {
		if _, err := w.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "PASSWORD") || !strings.Contains(out.String(), "u:xxxxx@mirror") || !strings.HasSuffix(out.String(), "tail xxxxx") {
		t.Errorf("written: %q", out.String())
	}
}
