package publish

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// BuilderError says a build failed because its builder did (it could not
// be reached, or it stopped answering mid-build), not because of the
// variant: the scheduler retries the variant on another builder.
type BuilderError struct {
	Addr string
	Err  error
}

func (e *BuilderError) Error() string { return fmt.Sprintf("builder %s: %v", e.Addr, e.Err) }
func (e *BuilderError) Unwrap() error { return e.Err }

// ErrNoBuilder is wrapped when every builder of the pool failed.
var ErrNoBuilder = errors.New("no builder of the pool is left")

// task is one variant to build; key groups variants that share layers
// (same base image and Python), which go to the same builder.
type task struct {
	id  int
	key string
}

// scheduler places tasks on a pool of builders, jobs at a time per
// builder. Placement is sticky and deterministic: the groups of tasks
// sharing a key are taken in the order of their first task, and each goes
// whole to the live builder with the fewest tasks assigned so far (the
// lowest index on a tie). When a builder fails (run returns a
// *BuilderError) it takes no more work; its failed task and its queue are
// placed again, group by group, on the live builders, and retried is
// called for each task moved. When no builder is left, the remaining
// tasks are given to fail.
type scheduler struct {
	builders []string
	jobs     int
	// run builds task id on builder b.
	run func(ctx context.Context, b int, id int) error
	// retried reports that task id moves from builder from to builder to
	// (to is -1 when none is left) because of err.
	retried func(id, from, to int, err error)
	// fail reports a task that cannot run anywhere.
	fail func(id int, err error)

	mu      sync.Mutex
	cond    *sync.Cond
	queues  [][]task
	load    []int
	dead    []bool
	pending int // tasks queued or running
}

// schedule runs every task and returns when all are done or failed.
func (s *scheduler) schedule(ctx context.Context, tasks []task) {
	s.cond = sync.NewCond(&s.mu)
	n := len(s.builders)
	s.queues, s.load, s.dead = make([][]task, n), make([]int, n), make([]bool, n)
	s.pending = len(tasks)
	s.place(tasks, ErrNoBuilder)
	jobs := max(s.jobs, 1)
	var wg sync.WaitGroup
	for b := range n {
		for range jobs {
			wg.Go(func() { s.worker(ctx, b) })
		}
	}
	wg.Wait()
}

// place assigns tasks, grouped by key in order of first appearance, to
// the live builders with the least load, and returns where each task id
// went. Called with mu held (or before the workers start). Without a
// live builder the tasks fail with why.
func (s *scheduler) place(tasks []task, why error) map[int]int {
	var order []string
	groups := map[string][]task{}
	for _, t := range tasks {
		if _, ok := groups[t.key]; !ok {
			order = append(order, t.key)
		}
		groups[t.key] = append(groups[t.key], t)
	}
	to := make(map[int]int, len(tasks))
	for _, k := range order {
		b := -1
		for i := range s.queues {
			if !s.dead[i] && (b < 0 || s.load[i] < s.load[b]) {
				b = i
			}
		}
		for _, t := range groups[k] {
			to[t.id] = b
			if b < 0 {
				s.pending--
				s.fail(t.id, why)
				continue
			}
			s.queues[b] = append(s.queues[b], t)
			s.load[b]++
		}
	}
	return to
}

func (s *scheduler) worker(ctx context.Context, b int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		for len(s.queues[b]) == 0 && s.pending > 0 && !s.dead[b] {
			s.cond.Wait()
		}
		if s.dead[b] || len(s.queues[b]) == 0 {
			s.cond.Broadcast()
			return
		}
		t := s.queues[b][0]
		s.queues[b] = s.queues[b][1:]
		s.mu.Unlock()
		err := s.run(ctx, b, t.id)
		s.mu.Lock()
		var be *BuilderError
		if errors.As(err, &be) && ctx.Err() != nil {
			s.fail(t.id, err) // cancelled: no retry
		} else if errors.As(err, &be) {
			s.dead[b] = true
			moved := append([]task{t}, s.queues[b]...)
			s.queues[b] = nil
			to := s.place(moved, fmt.Errorf("%w (the last: %w)", ErrNoBuilder, err))
			for _, mt := range moved {
				if to[mt.id] >= 0 {
					s.retried(mt.id, b, to[mt.id], err)
				}
			}
			s.cond.Broadcast()
			continue
		}
		s.pending--
		s.cond.Broadcast()
	}
}
