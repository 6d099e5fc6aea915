package ir

import (
	"fmt"
	"math/bits"
	"strings"
)

// Mask family names. The protect pass, the options check, the flag help
// and the backends' samplers all name families through this registry.
const (
	FamilyHaar = "haar"
	FamilyHD3  = "hd3"
)

// MaskFamily is one registered mask family: how many shield rows it
// stacks under n data rows, and what the backend samples.
type MaskFamily struct {
	Name string
	Doc  string
	// PowerOfTwo: the mask needs s = n + k to be a power of two, so the
	// shield rows pad the stack to one (shield-as-padding: no zero rows).
	PowerOfTwo bool
	// Insecure, when not empty, says which attack of the harness (gelo
	// attack) breaks the family: every plan using it carries the label in
	// its "insecure" meta entry, as the mask=none baseline does.
	Insecure string
}

// RowSpaceBreak is why row mixing with fewer shield rows than the
// crossing's width is insecure, whatever the family: any mixing A keeps
// rowspace(A [H; S]) = rowspace(H) + rowspace(S), so with n + k below the
// width the device reads every dictionary row (token) that lies in it.
// Leakcheck labels every plan with such a crossing with it.
const RowSpaceBreak = "row mixing with k shield rows leaves the row space of each crossing visible: " +
	"the attack harness reads every decoded token and the bag of prompt tokens from it (span membership)"

// ShieldRows is the family's rule for the shield row count k under n data
// rows with at least minK shield rows: minK, or for a power-of-two family
// the smallest k >= minK that makes n + k a power of two. The caller
// bounds n and minK (n + minK >= 1, far from overflow).
func (f MaskFamily) ShieldRows(n, minK int) int {
	if !f.PowerOfTwo {
		return minK
	}
	t := n + minK
	return 1<<bits.Len(uint(t-1)) - n
}

var maskFamilies []MaskFamily

// RegisterMaskFamily adds a family; a duplicate name panics at init.
func RegisterMaskFamily(f MaskFamily) {
	if _, ok := LookupMaskFamily(f.Name); ok {
		panic("ir: mask family registered twice: " + f.Name)
	}
	maskFamilies = append(maskFamilies, f)
}

// LookupMaskFamily returns the family called name.
func LookupMaskFamily(name string) (MaskFamily, bool) {
	for _, f := range maskFamilies {
		if f.Name == name {
			return f, true
		}
	}
	return MaskFamily{}, false
}

// MaskFamilies lists the registered families in registration order.
func MaskFamilies() []MaskFamily { return append([]MaskFamily(nil), maskFamilies...) }

// MaskFamilyNames lists the registered family names in registration order.
func MaskFamilyNames() []string {
	ns := make([]string, len(maskFamilies))
	for i, f := range maskFamilies {
		ns[i] = f.Name
	}
	return ns
}

// OrList joins names as "a, b or c", for help and error text.
func OrList(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// checkFamily is the type rule's check of a "family" attribute.
func checkFamily(n *Node) error {
	f, _ := n.Attrs.Str("family")
	if _, ok := LookupMaskFamily(f); !ok {
		return fmt.Errorf("unknown mask family %q (families: %s)", f, OrList(MaskFamilyNames()))
	}
	return nil
}

func init() {
	RegisterMaskFamily(MaskFamily{Name: FamilyHaar,
		Doc: "A from the QR of a Gaussian matrix (sign-fixed): Haar-distributed, O(s^3) to sample"})
	RegisterMaskFamily(MaskFamily{Name: FamilyHD3, PowerOfTwo: true,
		Doc: "A = D3 H D2 H D1 H (Walsh-Hadamard, random signs): O(s log s) a column, s a power of two"})
}
