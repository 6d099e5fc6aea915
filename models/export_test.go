package models

// SetSealedHook sets the hook OpenPrivate runs once a model's first tensor
// is sealed (tests of a file changed while it loads) and returns the
// function that restores the previous one.
func SetSealedHook(f func(path string)) (restore func()) {
	old := sealedHook
	sealedHook = f
	return func() { sealedHook = old }
}
