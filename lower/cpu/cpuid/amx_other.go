//go:build !linux || !amd64 || purego

package cpuid

func requestAMX() bool { return false }
