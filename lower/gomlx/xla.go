//go:build xla && cgo

package gomlx

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/xla"
)

// XLABuilt reports whether this binary links the XLA backend.
const XLABuilt = true

// newXLA opens XLA on the PJRT plugin named by config ("cpu", "cuda", an
// absolute path to a plugin, or "" for the first found, CUDA first),
// with options after a comma as gomlx accepts them. It never downloads a
// plugin: an attested TEE host must not fetch and dlopen binaries at run
// time, and these machines have no network anyway.
func newXLA(config string) (backends.Backend, error) {
	xla.EnableAutoInstall(false)
	plugin, _, _ := strings.Cut(config, ",")
	if filepath.IsAbs(plugin) {
		if _, err := os.Stat(plugin); err != nil {
			return nil, wrapped{fmt.Sprintf("%v: %v", ErrNoPlugin, err), ErrNoPlugin}
		}
	} else {
		var found []string
		err := guard("search PJRT plugins", func() error { found = xla.GetAvailablePlugins(); return nil })
		if err != nil {
			return nil, err
		}
		if len(found) == 0 || (plugin != "" && !slices.Contains(found, plugin)) {
			want := plugin
			if want == "" {
				want = "cpu"
			}
			msg := fmt.Sprintf("%v: set PJRT_PLUGIN_LIBRARY_PATH or install pjrt_c_api_%s_plugin.so; searched: %s",
				ErrNoPlugin, want, strings.Join(pluginSearchPaths(), ", "))
			if len(found) > 0 {
				msg += fmt.Sprintf(" (found only %q)", found)
			}
			return nil, wrapped{msg, ErrNoPlugin}
		}
	}
	var be backends.Backend
	err := guard("open xla", func() (err error) {
		be, err = xla.New(config)
		return err
	})
	return be, err
}

// wrapped is an error with its own message that unwraps to a sentinel.
type wrapped struct {
	msg string
	err error
}

func (w wrapped) Error() string { return w.msg }
func (w wrapped) Unwrap() error { return w.err }

// pluginSearchPaths mirrors go-xla's search list (its own is unexported):
// $PJRT_PLUGIN_LIBRARY_PATH if set, else the go-xla and legacy gopjrt
// directories, $LD_LIBRARY_PATH and the ld.so.conf directories.
func pluginSearchPaths() []string {
	if env, ok := os.LookupEnv("PJRT_PLUGIN_LIBRARY_PATH"); ok {
		return slices.DeleteFunc(strings.Split(env, ":"), func(s string) bool { return s == "" })
	}
	var paths []string
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".local", "lib", "go-xla")
		paths = append(paths, p, filepath.Join(p, "nvidia"), filepath.Join(home, ".local", "lib", "gomlx", "pjrt"))
	}
	paths = append(paths, "/usr/local/lib/go-xla", "/usr/local/lib/go-xla/nvidia", "/usr/local/lib/gomlx/pjrt")
	for _, p := range strings.Split(os.Getenv("LD_LIBRARY_PATH"), ":") {
		if filepath.IsAbs(p) {
			paths = append(paths, p)
		}
	}
	return append(paths, "the /etc/ld.so.conf directories")
}
