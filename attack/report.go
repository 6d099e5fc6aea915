package attack

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// Gate is one pass/fail line of the verdict.
type Gate struct {
	Name     string  `json:"name"`
	Required string  `json:"required"`
	Measured float64 `json:"measured"`
	Pass     bool    `json:"pass"`
}

// Control is the condition every attack must beat (mask none): if an
// attack fails there, the attack is broken and no reading of it means
// anything.
const Control = "C0"

// Margin is how far above chance a recovery attack may score on a level
// called secure (2 points, as the seed's gates), when the excess is also
// statistically significant (see significant).
const Margin = 0.02

// recovery lists the attack/metric pairs that recover tokens.
var recovery = [][2]string{
	{"span", "decode top-1"}, {"span", "decode top-5"}, {"span", "prefill bag recall"},
	{"span-centred", "prefill bag recall"}, {"gram-spike", "prefill bag recall"},
	{"span", "batched decode bag recall"}, {"span-centred", "batched decode bag recall"},
	{"gram-spike", "batched decode bag recall"}, {"strip-shield", "batched decode bag recall"},
	{"nn", "token recall"}, {"ima", "top-1"}, {"isa", "top-1"},
	{"sequential", "prompt top-1"},
	{"strip-shield", "decode top-1"}, {"strip-shield", "prefill bag recall"},
	{"hd3-structure", "true H ranked first"}, {"hd3-unmask", "decode top-1"}, {"hd3-unmask", "prefill bag recall"},
	{"hd3-unmask", "deep crossings unmasked"},
}

// Verdict is a condition's result against the gates.
type Verdict struct {
	Condition string `json:"condition"`
	Label     string `json:"label"`
	// Secure is true when every recovery attack is within Margin of
	// chance, gram_error >= 0.5 and ICA does no better than on payloads that
	// carry nothing.
	Secure bool   `json:"secure"`
	Broken []Gate `json:"broken,omitempty"` // the gates it fails
}

// Judge returns the control gates (the attacks work on C0) and a verdict
// per protected condition.
func Judge(reports []*Report) ([]Gate, []Verdict) {
	var gates []Gate
	var verdicts []Verdict
	for _, r := range reports {
		if r.Condition == Control {
			for _, g := range []struct {
				attack, metric string
				min            float64
			}{{"nn", "token recall", 0.95}, {"ima", "top-1", 0.95}, {"span", "decode top-1", 0.99}} {
				if _, single := r.Get(g.attack, g.metric); !single && g.metric == "decode top-1" {
					// A batched recording has bags at decode, not single rows.
					if _, ok := r.Get(g.attack, "batched decode bag recall"); ok {
						g.metric = "batched decode bag recall"
					}
				}
				f, ok := r.Get(g.attack, g.metric)
				v := math.NaN()
				if ok {
					v = f.Value
				}
				gates = append(gates, Gate{Name: fmt.Sprintf("%s %s %s", Control, g.attack, g.metric),
					Required: fmt.Sprintf(">= %.0f %%", 100*g.min), Measured: v, Pass: ok && v >= g.min})
			}
			continue
		}
		v := Verdict{Condition: r.Condition, Label: r.Label, Secure: true}
		for _, am := range recovery {
			f, ok := r.Get(am[0], am[1])
			if !ok || math.IsNaN(f.Value) {
				continue
			}
			if f.Value > f.Chance+Margin && Significant(f) {
				v.Broken = append(v.Broken, Gate{Name: am[0] + " " + am[1],
					Required: fmt.Sprintf("<= chance %s + 2 points", pct(f.Chance)), Measured: f.Value})
			}
		}
		for _, am := range [][2]string{{"hd3-structure", "fit residual, true H"}, {"hd3-unmask", "deep fit residual, no hypothesis"}} {
			if f, ok := r.Get(am[0], am[1]); ok && f.Value < f.Chance/4 {
				v.Broken = append(v.Broken, Gate{Name: am[0] + " " + am[1],
					Required: fmt.Sprintf(">= a Haar mask's %.3f / 4", f.Chance), Measured: f.Value})
			}
		}
		// gram_error: the seed's gate is >= 0.5; where rows that carry
		// nothing read below that (near-orthogonal plaintext rows at wide
		// widths), the mask cannot do better than they do, and only a
		// distance below theirs is a fingerprint.
		if f, ok := r.Get("gram-error", "distance"); ok && f.Value < 0.5 && !(f.Value >= f.Chance-0.05) {
			v.Broken = append(v.Broken, Gate{Name: "gram-error distance",
				Required: fmt.Sprintf(">= 0.5, or >= rows that carry nothing %.3f - 0.05", f.Chance), Measured: f.Value})
		}
		for _, a := range []string{"fastica", "jade", "anchor-ica", "joint-sobi"} {
			if f, ok := r.Get(a, "p95 |cos|"); ok && f.Value > f.Chance+0.05 {
				v.Broken = append(v.Broken, Gate{Name: a + " p95 |cos|",
					Required: fmt.Sprintf("<= null payloads %.3f + 0.05", f.Chance), Measured: f.Value})
			}
		}
		// Ciphertext words (lwe), and the differences of rows a reused
		// pad would cancel in, must look uniform: a uniformity figure
		// below its false-alarm level breaks the condition.
		for _, f := range r.Figures {
			if (f.Attack == "chi-square" || f.Attack == PadReuseAttack) && f.NA == "" && f.Value < f.Chance {
				v.Broken = append(v.Broken, Gate{Name: f.Attack + " " + f.Metric,
					Required: fmt.Sprintf(">= %g", f.Chance), Measured: f.Value})
			}
		}
		v.Secure = len(v.Broken) == 0
		verdicts = append(verdicts, v)
	}
	return gates, verdicts
}

// Significant reports whether a recovery figure is above its chance level
// beyond what luck explains: the exact binomial tail of its hit count over
// N trials at the chance rate is below 0.1 %. With few trials one lucky hit
// can exceed chance + 2 points; it does not make a level insecure.
func Significant(f Figure) bool {
	if f.N <= 0 || f.Chance <= 0 || f.Chance >= 1 {
		return true
	}
	k := int(math.Round(f.Value * float64(f.N)))
	return BinomTail(k, f.N, f.Chance) < 1e-3
}

// BinomTail is P(X >= k) for X ~ Binomial(n, p), summed in log space
// from the k-th term (each term from the last by C(n, i)/C(n, i-1)), so it
// holds where the terms underflow one by one (n in the tens of
// thousands: a reused pad's 65536 words).
func BinomTail(k, n int, p float64) float64 {
	if k <= 0 {
		return 1
	}
	var sum float64
	lp, lq := math.Log(p), math.Log1p(-p)
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	ln := a - b - c + float64(k)*lp + float64(n-k)*lq
	for i := k; i <= n; i++ {
		if i > k {
			ln += math.Log(float64(n-i+1)/float64(i)) + lp - lq
		}
		sum += math.Exp(ln)
		if ln < -745 && float64(i) > float64(n)*p {
			break // past the mode the terms only shrink: the rest underflows
		}
	}
	return math.Min(1, sum)
}

func pct(x float64) string {
	switch {
	case math.IsNaN(x):
		return "-"
	case x != 0 && x < 0.001:
		return fmt.Sprintf("%.3g %%", 100*x)
	}
	return fmt.Sprintf("%.1f %%", 100*x)
}

func value(metric string, x float64) string {
	if strings.Contains(metric, "residual") {
		if math.IsNaN(x) {
			return "-"
		}
		return fmt.Sprintf("%.3g", x)
	}
	if strings.Contains(metric, "cos") || strings.Contains(metric, "distance") {
		if math.IsNaN(x) {
			return "-"
		}
		return fmt.Sprintf("%.3f", x)
	}
	return pct(x)
}

// Markdown renders the conditions x attacks table (each cell "value
// (chance)"), the control gates and the verdicts.
func Markdown(reports []*Report, gates []Gate, verdicts []Verdict) string {
	var b strings.Builder
	var rows [][2]string
	seen := map[[2]string]bool{}
	for _, r := range reports {
		for _, f := range r.Figures {
			k := [2]string{f.Attack, f.Metric}
			if !seen[k] {
				seen[k] = true
				rows = append(rows, k)
			}
		}
	}
	b.WriteString("| attack | metric |")
	for _, r := range reports {
		fmt.Fprintf(&b, " %s |", r.Condition)
	}
	b.WriteString("\n|---|---|")
	for range reports {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, k := range rows {
		fmt.Fprintf(&b, "| %s | %s |", k[0], strings.ReplaceAll(k[1], "|", `\|`)) // a bare | would split the cell
		for _, r := range reports {
			f, ok := r.Get(k[0], k[1])
			if !ok {
				b.WriteString(" n/a |")
				continue
			}
			if f.NA != "" {
				fmt.Fprintf(&b, " n/a, %s |", f.NA)
				continue
			}
			fmt.Fprintf(&b, " %s (%s) |", value(f.Metric, f.Value), value(f.Metric, f.Chance))
		}
		b.WriteString("\n")
	}
	b.WriteString("\nEach cell: measured (chance). Conditions:\n\n")
	for _, r := range reports {
		fmt.Fprintf(&b, "- %s: %s", r.Condition, r.Label)
		if r.Insecure != "" {
			fmt.Fprintf(&b, " (plan says insecure: %s)", r.Insecure)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nControl gates (every attack must work without protection):\n\n")
	for _, g := range gates {
		fmt.Fprintf(&b, "- %s %s: %s, required %s\n", passText(g.Pass), g.Name, pct(g.Measured), g.Required)
	}
	b.WriteString("\nVerdicts:\n\n")
	for _, v := range verdicts {
		if v.Secure {
			fmt.Fprintf(&b, "- %s (%s): every attack at chance\n", v.Condition, v.Label)
			continue
		}
		var parts []string
		for _, g := range v.Broken {
			parts = append(parts, fmt.Sprintf("%s %s (required %s)", g.Name, value(g.Name, g.Measured), g.Required))
		}
		fmt.Fprintf(&b, "- %s (%s): INSECURE: %s\n", v.Condition, v.Label, strings.Join(parts, "; "))
	}
	return b.String()
}

func passText(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// JSON is every figure, gate and verdict. NaN (no chance level) is
// written as null.
func JSON(reports []*Report, gates []Gate, verdicts []Verdict) ([]byte, error) {
	type fig struct {
		Attack string   `json:"attack"`
		Metric string   `json:"metric"`
		Value  *float64 `json:"value"`
		Chance *float64 `json:"chance"`
		N      int      `json:"n"`
		Note   string   `json:"note,omitempty"`
		NA     string   `json:"na,omitempty"`
	}
	type rep struct {
		Condition string `json:"condition"`
		Label     string `json:"label"`
		Insecure  string `json:"insecure,omitempty"`
		Figures   []fig  `json:"figures"`
	}
	num := func(x float64) *float64 {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
		return &x
	}
	var rs []rep
	for _, r := range reports {
		out := rep{Condition: r.Condition, Label: r.Label, Insecure: r.Insecure}
		for _, f := range r.Figures {
			out.Figures = append(out.Figures, fig{f.Attack, f.Metric, num(f.Value), num(f.Chance), f.N, f.Note, f.NA})
		}
		rs = append(rs, out)
	}
	type gate struct {
		Name     string   `json:"name"`
		Required string   `json:"required"`
		Measured *float64 `json:"measured"`
		Pass     bool     `json:"pass"`
	}
	conv := func(gs []Gate) []gate {
		var out []gate
		for _, g := range gs {
			out = append(out, gate{g.Name, g.Required, num(g.Measured), g.Pass})
		}
		return out
	}
	type verdict struct {
		Condition string `json:"condition"`
		Label     string `json:"label"`
		Secure    bool   `json:"secure"`
		Broken    []gate `json:"broken,omitempty"`
	}
	var vs []verdict
	for _, v := range verdicts {
		vs = append(vs, verdict{v.Condition, v.Label, v.Secure, conv(v.Broken)})
	}
	return json.MarshalIndent(struct {
		Reports  []rep     `json:"reports"`
		Gates    []gate    `json:"control_gates"`
		Verdicts []verdict `json:"verdicts"`
	}{rs, conv(gates), vs}, "", "  ")
}
