package mask

import "gelo/lower/cpu/pool"

// blockTask is a unit of parallel work: runBlock(worker, block) must only
// write data that belongs to `block` (plus worker-private scratch).
type blockTask interface {
	runBlock(worker, block int)
}

// team runs blockTasks on the backend's one worker pool. With run, block b
// always goes to worker b mod active; with runDynamic, workers claim the
// next unclaimed block until none is left (for tasks whose worker-private
// scratch carries nothing from block to block). Either way a block's
// arithmetic never depends on which worker runs it, so results do not
// depend on the worker count or the schedule. run and runDynamic allocate
// nothing.
type team struct {
	workers int
	pool    *pool.Pool
	cur     teamJob
}

// teamJob adapts the current blockTask to pool.Job (a field of the team,
// so running it allocates nothing).
type teamJob struct{ task blockTask }

func (j *teamJob) Do(block, worker int) { j.task.runBlock(worker, block) }

// newTeam starts a team of workers goroutines (workers < 1:
// runtime.GOMAXPROCS(0)). A team dropped with its Workspace stops its
// goroutines when collected (pool.New).
func newTeam(workers int) *team {
	p := pool.New(workers)
	return &team{workers: p.Workers(), pool: p}
}

// run executes task over nblocks blocks on up to maxActive workers
// (maxActive < 1 means all), block b on worker b mod active.
func (t *team) run(task blockTask, nblocks, maxActive int) {
	t.cur.task = task
	t.pool.RunStatic(&t.cur, nblocks, maxActive)
	t.cur.task = nil
}

// runDynamic is run with blocks handed out on demand: a worker that starts
// late or is descheduled (a busy machine) holds up only the block it has
// claimed, not a fixed share of the blocks.
func (t *team) runDynamic(task blockTask, nblocks, maxActive int) {
	t.cur.task = task
	t.pool.RunN(&t.cur, nblocks, maxActive)
	t.cur.task = nil
}
