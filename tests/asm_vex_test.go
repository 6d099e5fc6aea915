package tests

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// legacySSE matches a non-VEX SSE instruction with an XMM operand. Mixed
// into AVX code with dirty upper YMM halves it costs an SSE/AVX state
// transition: one legacy MOVQ R10, X5 per block made the q8_0 matvec 9x
// slower on an AMD EPYC VM. After VZEROUPPER (the upper halves clean) it
// is harmless, which is where the probe kernels store their result.
var legacySSE = regexp.MustCompile(`^\s*` + legacyOps + `\s[^;/]*\bX([0-9]|1[0-5])\b`)

// legacyMacro is legacySSE inside a #define, where an XMM operand may be a
// macro parameter named X, X1, ...
var legacyMacro = regexp.MustCompile(`^\s*` + legacyOps + `\s[^;/]*\bX[0-9]*\b`)

const legacyOps = `(MOV[A-Z]*|ADD[PS][SD]|SUB[PS][SD]|MUL[PS][SD]|DIV[PS][SD]|CVT[A-Z0-9]*|PXOR|XORP[SD]|ANDP[SD]|PSHUF[A-Z]*|PINSR[A-Z]|PEXTR[A-Z]|SHUFP[SD]|UNPCK[A-Z]*|PUNPCK[A-Z]*|SQRT[A-Z]*|MAXP[SD]|MINP[SD]|PAND[A-Z]*|POR|PADD[A-Z]*|PSUB[A-Z]*|PMUL[A-Z]*|PMADD[A-Z]*|PSLL[A-Z]*|PSRL[A-Z]*|PSRA[A-Z]*)`

// TestAsmNoLegacySSEInAVX scans every amd64 assembly file of the module:
// inside a TEXT block that touches a YMM or ZMM register, a legacy-SSE
// instruction on an XMM register is allowed only after VZEROUPPER.
func TestAsmNoLegacySSEInAVX(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, "_amd64.s") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no amd64 assembly found: the walk is broken")
	}
	wide := regexp.MustCompile(`\b[YZ]([0-9]|[12][0-9]|3[01])\b`)
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		type hit struct {
			line int
			text string
		}
		var pending []hit // legacy lines of the current TEXT before any VZEROUPPER
		avx, clean, inMacro := false, false, false
		flush := func() {
			if avx {
				for _, h := range pending {
					rel, _ := filepath.Rel(root, f)
					t.Errorf("%s:%d: legacy-SSE instruction in AVX code (use the V form): %s", rel, h.line, strings.TrimSpace(h.text))
				}
			}
			pending, avx, clean = nil, false, false
		}
		sc := bufio.NewScanner(fh)
		n := 0
		for sc.Scan() {
			n++
			line := sc.Text()
			code, _, _ := strings.Cut(line, "//")
			if strings.HasPrefix(strings.TrimSpace(code), "TEXT") {
				flush()
				continue
			}
			trimmed := strings.TrimSpace(code)
			macroLine := inMacro || strings.HasPrefix(trimmed, "#define")
			inMacro = macroLine && strings.HasSuffix(trimmed, "\\")
			if macroLine {
				// Macro bodies are checked as written (every macro
				// here expands inside AVX code).
				for _, part := range strings.Split(code, ";") {
					if legacyMacro.MatchString(part) {
						rel, _ := filepath.Rel(root, f)
						t.Errorf("%s:%d: legacy-SSE instruction in an AVX macro (use the V form): %s", rel, n, strings.TrimSpace(part))
					}
				}
				continue
			}
			if wide.MatchString(code) {
				avx = true
			}
			if strings.Contains(code, "VZEROUPPER") {
				clean = true
			}
			if !clean && legacySSE.MatchString(code) {
				pending = append(pending, hit{n, line})
			}
		}
		flush()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		fh.Close()
	}
}
