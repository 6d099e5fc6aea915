package lwebreak

import (
	"fmt"
	"math"
	"strings"

	"gelo/attack"
	"gelo/attack/uniform"
)

// controls are the figures that must show a break: the toy instances and
// the two controls. If one fails, the attack is broken and its reading on
// the level means nothing.
var controls = []struct {
	cond, attack, metric string
	min                  float64 // for recovery figures: the least value
	nonUniform           bool    // for a chi-square figure: must be below uniform.FalseAlarm
}{
	{CondPrimal, "primal (fplll)", "rows with s recovered", 1, false},
	{CondMitM, "mitm", "rows with s recovered", 1, false},
	{CondReused, "pad-difference", "rows recovered from a known partner", 0.99, false},
	{CondReused, "chi-square", "uniformity of c1 - c2 (min p x 6)", 0, true},
	{CondZero, "chi-square", "uniformity gaussian rows (min p x 6)", 0, true},
	{CondZero, "nn", "token recall", 0.95, false},
	{CondZero, "span", "bag recall", 0.95, false},
}

// Judge returns the control gates (every attack breaks what it must) and a
// verdict per condition by the harness's rules: a recovery figure more
// than attack.Margin above chance, significantly (binomial tail below
// 0.1 %), a chi-square figure below its false-alarm level, a gram-error
// distance below 0.5 and below its chance less 0.05, or an ICA p95 |cos|
// above its null payloads' plus 0.05, breaks the condition. The level's condition (CondLevel) is the one that must stay
// at chance.
func Judge(reports []*attack.Report) ([]attack.Gate, []attack.Verdict) {
	byCond := map[string]*attack.Report{}
	for _, r := range reports {
		byCond[r.Condition] = r
	}
	var gates []attack.Gate
	for _, c := range controls {
		g := attack.Gate{Name: fmt.Sprintf("%s %s %s", c.cond, c.attack, c.metric), Measured: math.NaN()}
		if c.nonUniform {
			g.Required = fmt.Sprintf("< %g", uniform.FalseAlarm)
		} else {
			g.Required = fmt.Sprintf(">= %.0f %%", 100*c.min)
		}
		if r := byCond[c.cond]; r != nil {
			if f, ok := r.Get(c.attack, c.metric); ok && f.NA == "" {
				g.Measured = f.Value
				if c.nonUniform {
					g.Pass = f.Value < uniform.FalseAlarm
				} else {
					g.Pass = f.Value >= c.min
				}
			}
		}
		gates = append(gates, g)
	}
	var verdicts []attack.Verdict
	for _, r := range reports {
		v := attack.Verdict{Condition: r.Condition, Label: r.Label}
		for _, f := range r.Figures {
			if f.NA != "" || math.IsNaN(f.Value) {
				continue
			}
			switch {
			case f.Attack == "gram-error":
				// the harness's gate: >= 0.5, or no lower than rows that carry nothing
				if f.Value < 0.5 && !(f.Value >= f.Chance-0.05) {
					v.Broken = append(v.Broken, attack.Gate{Name: f.Attack + " " + f.Metric,
						Required: fmt.Sprintf(">= 0.5, or >= rows that carry nothing %.3f - 0.05", f.Chance), Measured: f.Value})
				}
				continue
			case f.Metric == "p95 |cos|":
				if f.Value > f.Chance+0.05 {
					v.Broken = append(v.Broken, attack.Gate{Name: f.Attack + " " + f.Metric,
						Required: fmt.Sprintf("<= null payloads %.3f + 0.05", f.Chance), Measured: f.Value})
				}
				continue
			}
			if f.Attack == "chi-square" {
				if f.Value < f.Chance {
					v.Broken = append(v.Broken, attack.Gate{Name: f.Attack + " " + f.Metric,
						Required: fmt.Sprintf(">= %g", f.Chance), Measured: f.Value})
				}
				continue
			}
			if f.Value > f.Chance+attack.Margin && attack.Significant(f) {
				v.Broken = append(v.Broken, attack.Gate{Name: f.Attack + " " + f.Metric,
					Required: fmt.Sprintf("<= chance %.3g + 2 points", f.Chance), Measured: f.Value})
			}
		}
		v.Secure = len(v.Broken) == 0
		verdicts = append(verdicts, v)
	}
	return gates, verdicts
}

// Summary is one line per verdict and gate, for logs.
func Summary(gates []attack.Gate, verdicts []attack.Verdict) string {
	var b strings.Builder
	for _, g := range gates {
		fmt.Fprintf(&b, "gate %s: %v (measured %.4g, required %s)\n", g.Name, g.Pass, g.Measured, g.Required)
	}
	for _, v := range verdicts {
		fmt.Fprintf(&b, "%s (%s): secure %v, %d figures beat chance\n", v.Condition, v.Label, v.Secure, len(v.Broken))
	}
	return b.String()
}
