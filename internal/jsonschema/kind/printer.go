package kind

import "fmt"

// A Printer formats the messages of errors. mcpctl patch: upstream takes a
// golang.org/x/text/message.Printer, whose packages' initialisation ran in
// every mcpctl process; mcpctl's messages are English, so fmt does.
type Printer struct{}

// Sprintf is fmt.Sprintf.
func (*Printer) Sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }
