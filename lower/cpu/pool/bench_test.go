package pool

import "testing"

// spinJob is arithmetic only (about 35 us a task on a 2 GHz core), so a
// run's time is the schedule's: the longest participant's tasks plus what
// starting and ending the run costs.
type spinJob struct{ sink float64 }

func (j *spinJob) Do(task, _ int) {
	x := float64(task + 1)
	for i := 0; i < 20000; i++ {
		x = x*1.0000001 + 1e-9
	}
	if x == 0 {
		j.sink = x
	}
}

// BenchmarkRunTasks runs one task a participant, each longer than a
// waiting caller spins (spinFor), dynamic and static: a run should take
// about one task, as when every participant was already awake. Static
// runs, whose caller must wait for the helpers' own tasks, once fell into
// a cycle of a blocked caller and a parked helper at 2-3x that.
func BenchmarkRunTasks(b *testing.B) {
	p := New(0)
	defer p.Close()
	w := p.Workers()
	j := &spinJob{}
	b.Run("dynamic", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			p.Run(j, w)
		}
	})
	b.Run("static", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			p.RunStatic(j, w, w)
		}
	})
}
