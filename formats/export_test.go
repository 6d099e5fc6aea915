package formats

// Unregister removes a format a test registered (tests only: a plan may
// name a registered format, so production code never removes one).
func Unregister(name string) {
	mu.Lock()
	defer mu.Unlock()
	for i, f := range registry {
		if f.Name == name {
			registry = append(registry[:i:i], registry[i+1:]...)
			return
		}
	}
}
