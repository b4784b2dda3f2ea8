package main

// Regenerate completions/ and man/ from the command tree.
//go:generate go run ./internal/gendocs
