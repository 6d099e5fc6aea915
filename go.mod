module gelo

go 1.26.0

require (
	github.com/dominikbraun/graph v0.23.0 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	golang.org/x/crypto v0.59.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/term v0.48.0 // indirect
)
