package commands

// ExitCode is one row of the exit-code table.
type ExitCode struct {
	Code    int
	Meaning string // Markdown: `code` spans allowed
}

// ExitCodes is the exit-code table the man pages print and the README's
// "Exit codes" section must repeat (a test checks it does).
var ExitCodes = []ExitCode{
	{exitOK, "success"},
	{exitToolError, "the tool answered with an error (`isError`; the result is still printed), or mcpctl failed unexpectedly"},
	{exitUsage, "usage or config error: bad flags, unknown server or tool, arguments that break the tool's schema, a bad `--jq` filter, a request the server does not do (Method not found), a server's command not found or its `cwd` missing as it starts"},
	{exitUnavailable, "a server is unavailable or failed to start; a list (tools, prompts, resources, inspect) that leaves out one that starts on use and could not start prints the others' items first"},
	{exitTimeout, "timeout: a server did not answer in time (it was told to cancel)"},
	{exitProtocol, "protocol error: a server answered with a JSON-RPC error"},
	{exitNoSession, "no session running where one was required"},
	{exitAuth, "a remote server needs authorization: run the `mcpctl auth login SERVER` the error names"},
	{exitInterrupted, "interrupted (Ctrl-C); by another signal, 128 + its number (143 for SIGTERM, 129 for SIGHUP, 131 for SIGQUIT; a second signal ends it at once, a second SIGQUIT with Go's goroutine dump). Commands a signal ends as they should (`watch` without `--count`, `logs -f`, `serve`, `up --foreground`) exit 0 (`watch` 2 when its `--jq` filter failed on an event)"},
	{exitOutputClosed, "whoever read its output went away before all of it was written (its output piped to `head`, as SIGPIPE would have ended it); the servers it started for itself are stopped properly first (a session `up` started runs on), and nothing is printed. `watch` without `--count`, `logs -f` and `serve` end so with 0 (`watch` 2 when its `--jq` filter failed on an event)"},
}
