package publish

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
)

// fakePool stands in for BuildKit daemons in the scheduler test only: it
// records which builder ran which task, and fails the builders in down
// (their first task, or every task when connect is true).
type fakePool struct {
	mu      sync.Mutex
	ran     map[int]int // task -> builder that finished it
	calls   map[int][]int
	down    map[int]bool
	retries []string
	failed  map[int]error
}

func (p *fakePool) scheduler(builders, jobs int) *scheduler {
	var addrs []string
	for i := range builders {
		addrs = append(addrs, fmt.Sprintf("tcp://b%d:1234", i))
	}
	p.ran, p.calls, p.failed = map[int]int{}, map[int][]int{}, map[int]error{}
	return &scheduler{
		builders: addrs,
		jobs:     jobs,
		run: func(_ context.Context, b, id int) error {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.calls[b] = append(p.calls[b], id)
			if p.down[b] {
				return &BuilderError{Addr: addrs[b], Err: errors.New("connection refused")}
			}
			p.ran[id] = b
			return nil
		},
		retried: func(id, from, to int, _ error) {
			p.retries = append(p.retries, fmt.Sprintf("%d:%d->%d", id, from, to))
		},
		fail: func(id int, err error) { p.failed[id] = err },
	}
}

func tasks(keys ...string) []task {
	var out []task
	for i, k := range keys {
		out = append(out, task{id: i, key: k})
	}
	return out
}

func TestSchedulerSticky(t *testing.T) {
	for _, tc := range []struct {
		name     string
		builders int
		keys     []string
		want     map[int]int // task -> builder
	}{
		{"one builder takes all", 1, []string{"a", "b", "a"}, map[int]int{0: 0, 1: 0, 2: 0}},
		{"groups stay together, balanced by load", 2, []string{"a", "a", "b", "c", "a"},
			// a (3 tasks) -> b0; b -> b1 (load 1 < 3); c -> b1 (2 < 3).
			map[int]int{0: 0, 1: 0, 4: 0, 2: 1, 3: 1}},
		{"more builders than groups", 3, []string{"x", "y", "x"}, map[int]int{0: 0, 2: 0, 1: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, jobs := range []int{1, 3} {
				p := &fakePool{}
				s := p.scheduler(tc.builders, jobs)
				s.schedule(t.Context(), tasks(tc.keys...))
				if len(p.failed) != 0 || len(p.retries) != 0 {
					t.Errorf("jobs %d: failed %v, retries %v", jobs, p.failed, p.retries)
				}
				if fmt.Sprint(p.ran) != fmt.Sprint(tc.want) {
					t.Errorf("jobs %d: placement %v, want %v", jobs, p.ran, tc.want)
				}
			}
		})
	}
}

func TestSchedulerBuilderDown(t *testing.T) {
	t.Run("a dead builder's tasks move, group by group", func(t *testing.T) {
		p := &fakePool{down: map[int]bool{0: true}}
		s := p.scheduler(3, 1)
		// a -> b0 (dead), b -> b1, c -> b2; then a's tasks move to the
		// least loaded live builder, b1 (tie with b2, lowest index).
		s.schedule(t.Context(), tasks("a", "b", "c", "a"))
		if len(p.failed) != 0 {
			t.Fatalf("failed: %v", p.failed)
		}
		want := map[int]int{0: 1, 3: 1, 1: 1, 2: 2}
		if fmt.Sprint(p.ran) != fmt.Sprint(want) {
			t.Errorf("placement %v, want %v", p.ran, want)
		}
		slices.Sort(p.retries)
		if fmt.Sprint(p.retries) != "[0:0->1 3:0->1]" {
			t.Errorf("retries %v", p.retries)
		}
		if len(p.calls[0]) != 1 {
			t.Errorf("the dead builder was called %d times: %v", len(p.calls[0]), p.calls[0])
		}
	})
	t.Run("every builder dead fails every task", func(t *testing.T) {
		p := &fakePool{down: map[int]bool{0: true, 1: true}}
		s := p.scheduler(2, 2)
		s.schedule(t.Context(), tasks("a", "b", "a"))
		if len(p.ran) != 0 || len(p.failed) != 3 {
			t.Fatalf("ran %v failed %v", p.ran, p.failed)
		}
		for id, err := range p.failed {
			if !errors.Is(err, ErrNoBuilder) {
				t.Errorf("task %d: %v, want ErrNoBuilder", id, err)
			}
		}
	})
}
