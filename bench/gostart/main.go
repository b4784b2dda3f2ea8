// Command gostart is the floor bench/run measures mcpctl's own start
// against: a Go program that prints one line and exits, built the same way.
// What mcpctl takes beyond it is its own: the packages it links and
// initialises, and its work before printing.
package main

import "os"

func main() { os.Stdout.WriteString("gostart\n") }
