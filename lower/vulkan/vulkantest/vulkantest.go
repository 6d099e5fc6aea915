// Package vulkantest opens a Vulkan device for the tests outside
// lower/vulkan, with one policy: without a driver a test skips, saying
// how to get one, unless GELO_REQUIRE_VULKAN=1 (CI) makes that a failure,
// so a broken install cannot pass as a skip.
package vulkantest

import (
	"errors"
	"os"
	"testing"

	"gelo/lower/vulkan"
	"gelo/models"
)

// validated is what the policy watches: a device or an engine on one.
type validated interface {
	ValidationErrors() (int, string)
	Close()
}

// Open returns a device for the test (validation on, where the layer is
// installed) and fails the test on any validation error at cleanup.
func Open(t testing.TB) *vulkan.Device {
	t.Helper()
	d, err := vulkan.New(vulkan.Options{DeviceIndex: -1, Validation: true})
	return require(t, d, err)
}

// OpenForward returns the whole-forward engine over w, under the same
// policy as Open.
func OpenForward(t testing.TB, w *models.Weights) *vulkan.Forward {
	t.Helper()
	fw, err := vulkan.NewForward(vulkan.Options{DeviceIndex: -1, Validation: true}, w)
	return require(t, fw, err)
}

// require applies the policy to what an open returned.
func require[T validated](t testing.TB, v T, err error) T {
	t.Helper()
	if errors.Is(err, vulkan.ErrUnavailable) {
		if os.Getenv("GELO_REQUIRE_VULKAN") == "1" {
			t.Fatalf("GELO_REQUIRE_VULKAN=1 and no Vulkan driver: %v", err)
		}
		t.Skipf("no Vulkan driver (install mesa-vulkan-drivers for lavapipe): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n, msg := v.ValidationErrors()
		v.Close()
		if n > 0 {
			t.Errorf("%d Vulkan validation errors, latest:\n%s", n, msg)
		}
	})
	return v
}
