package main

import (
	"strings"
	"testing"
	"time"
)

// TestSteps reads BuildKit's plain progress of two solves: vertices with
// their DONE times, timed parts of the export, cached steps left out, ids
// named again in the second solve, longest first.
func TestSteps(t *testing.T) {
	progress := `#1 [internal] load build definition from Dockerfile
#1 transferring dockerfile: 2B done
#1 DONE 0.1s

#5 [2/3] RUN pip install torch
#5 0.512 Collecting torch
#5 DONE 3.2s

#6 [3/3] RUN pip install extra
#6 CACHED

#8 exporting to image
#8 exporting layers 0.4s done
#8 rewriting layers with source-date-epoch 1700000000 (2023-11-14) 2.5s done
#8 DONE 3.0s
#1 [gpuimg-check 1/1] RUN python3 /tmp/gpuimg-proof.py
#1 DONE 0.7s
`
	got := steps(progress)
	want := []step{
		{"[2/3] RUN pip install torch", 3200 * time.Millisecond},
		{"exporting to image", 3 * time.Second},
		{"exporting to image › rewriting layers with source-date-epoch 1700000000 (2023-11-14)", 2500 * time.Millisecond},
		{"[gpuimg-check 1/1] RUN python3 /tmp/gpuimg-proof.py", 700 * time.Millisecond},
		{"exporting to image › exporting layers", 400 * time.Millisecond},
		{"[internal] load build definition from Dockerfile", 100 * time.Millisecond},
	}
	if len(got) != len(want) {
		t.Fatalf("steps = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("step %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if d := proofSteps(progress); d != 700*time.Millisecond {
		t.Errorf("proofSteps = %s, want 700ms", d)
	}
}

func TestStampWriter(t *testing.T) {
	w := &stampWriter{start: time.Now().Add(-1500 * time.Millisecond), stamp: true}
	for _, s := range []string{"#1 [inter", "nal] load\n#1 DONE 0.0s\n", "#2 part"} {
		if _, err := w.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := w.raw.String(), "#1 [internal] load\n#1 DONE 0.0s\n#2 part"; got != want {
		t.Errorf("raw = %q, want %q", got, want)
	}
	lines := strings.Split(strings.TrimSuffix(w.stamped.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], " #1 [internal] load") || !strings.HasSuffix(lines[1], " #1 DONE 0.0s") {
		t.Fatalf("stamped = %q: want two complete lines, each after its time", w.stamped.String())
	}
	if !strings.HasPrefix(strings.TrimSpace(lines[0]), "1.5") {
		t.Errorf("stamped line %q: want the seconds since the start (1.5…) first", lines[0])
	}
	quiet := &stampWriter{start: time.Now()}
	_, _ = quiet.Write([]byte("a\n"))
	if quiet.stamped.Len() != 0 {
		t.Errorf("without stamp, stamped = %q, want nothing", quiet.stamped.String())
	}
}
