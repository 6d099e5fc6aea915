//go:build cgo

package tests

import "gelo/lower/vulkan"

// The vulkan backend lowers its op table only where it is built with cgo
// (lower/vulkan/stub.go is the rest).
func init() { opTables = append(opTables, vulkan.Capabilities()) }
