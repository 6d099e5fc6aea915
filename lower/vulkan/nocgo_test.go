//go:build !cgo

package vulkan

import (
	"errors"
	"os"
	"testing"
)

func TestNotBuiltWithCgo(t *testing.T) {
	_, err := New(Options{})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("New without cgo: %v, want ErrUnavailable", err)
	}
	if os.Getenv("GELO_REQUIRE_VULKAN") == "1" {
		t.Fatalf("GELO_REQUIRE_VULKAN=1 in a build without cgo: %v", err)
	}
	t.Skip(err)
}
