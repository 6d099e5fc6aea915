//go:build !amd64 || purego

package cpuid

func vendor() string { return "" }
