package attest

import (
	"bytes"
	"crypto/sha256"
	"strings"
	"testing"
)

// TestTensorSum: a tensor given by its Sum and Bytes hashes as the same
// bytes given as Data or a Reader; a Sum whose byte count disagrees with
// the dtype and shape is refused as a wrong-sized Data would be.
func TestTensorSum(t *testing.T) {
	data := bytes.Repeat([]byte{1, 2, 3, 4}, 6)
	sum := sha256.Sum256(data)
	in := func(ti TensorInput) IdentityInput {
		return IdentityInput{Config: []byte("{}"), Tensors: []TensorInput{ti}}
	}
	base := TensorInput{Name: "w", DType: "F32", Shape: []int{2, 3}}
	byData, byReader, bySum := base, base, base
	byData.Data = data
	byReader.Reader = bytes.NewReader(data)
	bySum.Sum, bySum.Bytes = &sum, int64(len(data))
	var ids []Identity
	for _, ti := range []TensorInput{byData, byReader, bySum} {
		id, err := ComputeIdentity(in(ti))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if ids[0].Digest != ids[1].Digest || ids[0].Digest != ids[2].Digest {
		t.Fatalf("Data, Reader and Sum give %s, %s, %s", ids[0].Digest, ids[1].Digest, ids[2].Digest)
	}
	bySum.Bytes = 20
	if _, err := ComputeIdentity(in(bySum)); err == nil || !strings.Contains(err.Error(), "needs 24 bytes, got 20") {
		t.Fatalf("a Sum of the wrong size: %v", err)
	}
}
