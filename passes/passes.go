// Package passes holds gelo's compiler passes and the manager that runs
// them in a fixed, named order. Every pass can be dumped after it runs
// (--dump-after=NAME, --dump-all), and the IR is validated after each
// one, so a miscompile is found by reading two dumps.
package passes

import (
	"fmt"
	"strings"

	"gelo/ir"
)

// Pass transforms or checks a module in place.
type Pass struct {
	Name string
	Doc  string
	Run  func(m *ir.Module) error
}

// Manager runs passes in order.
type Manager struct {
	Passes []Pass
	// DumpAfter names passes whose output is handed to Dump; "all" (or
	// DumpAll) dumps after every pass, and "trace" dumps the traced input.
	DumpAfter map[string]bool
	DumpAll   bool
	// Dump receives the pass name and the module after it ran.
	Dump func(pass string, m *ir.Module) error
}

// Names lists the pass names in order.
func (pm *Manager) Names() []string {
	ns := make([]string, len(pm.Passes))
	for i, p := range pm.Passes {
		ns[i] = p.Name
	}
	return ns
}

// CheckDumpNames refuses a --dump-after name that is not a pass, so a typo
// does not silently dump nothing.
func (pm *Manager) CheckDumpNames() error {
	known := map[string]bool{"trace": true, "all": true}
	for _, n := range pm.Names() {
		known[n] = true
	}
	for n := range pm.DumpAfter {
		if !known[n] {
			return fmt.Errorf("--dump-after=%s: no such pass (passes: trace, %s)", n, strings.Join(pm.Names(), ", "))
		}
	}
	return nil
}

// Run validates the input, then runs each pass, validating after it and
// recording its name in the module's "passes" meta entry.
func (pm *Manager) Run(m *ir.Module) error {
	if err := pm.CheckDumpNames(); err != nil {
		return err
	}
	if err := ir.ValidateModule(m); err != nil {
		return fmt.Errorf("traced IR is invalid: %w", err)
	}
	if err := pm.dump("trace", m); err != nil {
		return err
	}
	for _, p := range pm.Passes {
		if err := p.Run(m); err != nil {
			return fmt.Errorf("pass %s: %w", p.Name, err)
		}
		if m.Meta == nil {
			m.Meta = map[string]string{}
		}
		if prev := m.Meta["passes"]; prev != "" {
			m.Meta["passes"] = prev + "," + p.Name
		} else {
			m.Meta["passes"] = p.Name
		}
		if err := ir.ValidateModule(m); err != nil {
			return fmt.Errorf("after pass %s: %w", p.Name, err)
		}
		if err := pm.dump(p.Name, m); err != nil {
			return err
		}
	}
	return nil
}

func (pm *Manager) dump(name string, m *ir.Module) error {
	if pm.Dump == nil || !(pm.DumpAll || pm.DumpAfter["all"] || pm.DumpAfter[name]) {
		return nil
	}
	return pm.Dump(name, m)
}
