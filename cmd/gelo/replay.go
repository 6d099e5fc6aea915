package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"time"

	"gelo/runtime"
)

// runReplay decodes the same steps twice, eagerly (every step lowered and
// allocated anew) and captured (each kv bucket recorded once, then
// replayed), and proves every step's logits bit-identical.
func runReplay(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	var mf modelFlags
	mf.register(fs)
	mf.registerProtect(fs)
	steps := fs.Int("steps", 128, "decode steps")
	promptIDs := fs.String("prompt-ids", defaultPrompt, "comma-separated prompt token ids")
	verbose := fs.Bool("v", false, "print every step")
	if err := parseNoArgs(fs, args, stderr); err != nil {
		return err
	}
	if *steps <= 0 {
		return fmt.Errorf("%w: --steps must be positive, got %d", errUsage, *steps)
	}
	prompt, err := parseIDs(*promptIDs)
	if err != nil {
		return err
	}
	mf.maxContext = max(mf.maxContext, len(prompt)+*steps+1)
	if _, cfg, err := mf.resolve(); err != nil {
		return err
	} else if err := mf.preflight(cfg, nil, 1, len(prompt), *steps); err != nil {
		return err
	}
	l, err := mf.open(stderr)
	if err != nil {
		return err
	}
	defer l.Close()
	m, err := mf.compile(l.Source, l.Config, stderr)
	if err != nil {
		return err
	}
	key, err := mf.key()
	if err != nil {
		return err
	}
	open := func(eager bool) (*runtime.Session, func(), error) {
		eng, err := mf.engine(l.Weights, key, m)
		if err != nil {
			return nil, nil, err
		}
		s, err := runtime.NewSession(m, eng.Runtime, runtime.Options{MaxContext: mf.maxContext, Eager: eager})
		if err != nil {
			eng.Close()
			return nil, nil, err
		}
		return s, eng.Close, nil
	}
	eager, closeE, err := open(true)
	if err != nil {
		return err
	}
	defer closeE()
	replay, closeR, err := open(false)
	if err != nil {
		return err
	}
	defer closeR()
	a, err := eager.Prefill(prompt)
	if err != nil {
		return err
	}
	b, err := replay.Prefill(prompt)
	if err != nil {
		return err
	}
	var tE, tR time.Duration
	var timedSteps int
	mismatches := 0
	seen := map[int]bool{}
	for step := 0; step < *steps; step++ {
		tok := int32(runtime.Argmax(a))
		bucket := runtime.Bucket(replay.Pos()+1, replay.MaxContext())
		first := !seen[bucket]
		seen[bucket] = true
		t0 := time.Now()
		if a, err = eager.Decode(tok); err != nil {
			return err
		}
		t1 := time.Now()
		if b, err = replay.Decode(tok); err != nil {
			return err
		}
		t2 := time.Now()
		same := true
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				same = false
				break
			}
		}
		if !same {
			mismatches++
		}
		if !first { // a bucket's first step is the capture itself
			tE += t1.Sub(t0)
			tR += t2.Sub(t1)
			timedSteps++
		}
		if *verbose || !same {
			fmt.Fprintf(stdout, "step %4d  bucket %5d  eager %10s  replay %10s  %s\n", step, bucket,
				short(t1.Sub(t0)), short(t2.Sub(t1)), map[bool]string{true: "bit-identical", false: "DIFFERENT"}[same])
		}
	}
	fmt.Fprintf(stdout, "model %s, mask %s: %d decode steps across kv buckets %v\n", l.Spec, mf.mask, *steps, replay.Captured())
	if timedSteps > 0 {
		e, r := tE/time.Duration(timedSteps), tR/time.Duration(timedSteps)
		fmt.Fprintf(stdout, "TPOT eager %s, replay %s; dispatch overhead (eager - replay) / eager = %.1f %%\n",
			short(e), short(r), 100*(e.Seconds()-r.Seconds())/e.Seconds())
	}
	if mismatches > 0 {
		return fmt.Errorf("%d of %d steps differ between eager and replay", mismatches, *steps)
	}
	fmt.Fprintf(stdout, "every step's logits are bit-identical between eager and replay\n")
	return nil
}
