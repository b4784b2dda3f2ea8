package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// Every bad config gets one exact message per problem, placed at
// file:line:column with the field's path, and a hint where one helps. All
// files of a case are loaded together, in order.
func TestBadConfigs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files [][2]string
		env   map[string]string
		want  string // every error, then each hint as "hint: ..."
	}{
		{"syntax error", [][2]string{{"mcp.json", "{\"servers\": {\n  \"a\": {\"command\": \"x\"\n}"}}, nil, `mcp.json:3:2: invalid JSON: the file ends before a { or [ is closed
hint: close every { with } and every [ with ]`},
		// A syntax error never quotes the text: it may be a key.
		{"a value not quoted", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x\", \"env\": {\"K\": sk-proj-Leak0123}}}}"}}, nil, `mcp.json:1:49: invalid JSON: a word that is not quoted (a key or a value)
hint: quote keys and strings with double quotes: "KEY": "value"; true, false and null go bare`},
		{"an escape JSON does not know", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x\", \"env\": {\"K\": \"hun\\qSecret\"}}}}"}}, nil, `mcp.json:1:49: invalid JSON: a string holds a backslash that is not a JSON escape
hint: write a backslash as \\ (a Windows path: "C:\\Users\\me"); JSON knows \" \\ \/ \b \f \n \r \t and \uXXXX`},
		{"single quotes", [][2]string{{"mcp.json", "{'servers': {}}"}}, nil, `mcp.json:1:2: invalid JSON: a single quote
hint: JSON quotes strings and keys with double quotes: "value"`},
		{"a comma missing in a list", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x\", \"args\": [\"a\" \"b\"]}}}"}}, nil, `mcp.json:1:49: invalid JSON: invalid character '"' after array value (expecting ',' or ']')
hint: a comma is missing between two fields or items`},
		{"a string not closed", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x}}}"}}, nil, `mcp.json:1:36: invalid JSON: a string is not closed
hint: end it with a double quote: "value"`},
		{"a comma missing", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x\" \"args\": []}}}"}}, nil, `mcp.json:1:35: invalid JSON: invalid character '"' after object value (expecting ',' or '}')
hint: a comma is missing between two fields or items`},
		{"wrong type", [][2]string{{"mcp.json", "{\"servers\": {\n  \"fs\": {\n    \"command\": \"x\",\n    \"args\": [\"a\", 7]\n  }\n}}"}}, nil, `mcp.json:4:19: servers.fs.args[1]: expected string, got number
hint: write it in double quotes, as a string: "8080"`},
		{"unknown field", [][2]string{{"mcp.json", "{\"servers\": {\"fs\": {\"command\": \"x\", \"agrs\": []}}}"}}, nil, `mcp.json:1:37: servers.fs.agrs: unknown field
hint: did you mean "args"?`},
		{"Windsurf's serverUrl", [][2]string{{"mcp.json", "{\"mcpServers\": {\"r\": {\"serverUrl\": \"https://example.com/mcp\"}}}"}}, nil, `mcp.json:1:23: mcpServers.r.serverUrl: unknown field
hint: a remote server's address is "url" here (serverUrl is Windsurf's name)`},
		{"Gemini CLI's httpUrl", [][2]string{{"mcp.json", "{\"mcpServers\": {\"r\": {\"httpUrl\": \"https://example.com/mcp\"}}}"}}, nil, `mcp.json:1:23: mcpServers.r.httpUrl: unknown field
hint: a remote server's address is "url" here (httpUrl is Gemini CLI's name for a streamable HTTP one)`},
		{"Windsurf's serverUrl in Codex's config.toml", [][2]string{{"config.toml", "[mcp_servers.r]\nserverUrl = \"https://example.com/mcp\"\n"}}, nil, `config.toml:2:1: mcp_servers.r.serverUrl: unknown field
hint: a remote server's address is "url" here (serverUrl is Windsurf's name)`},
		{"Cline's transportType", [][2]string{{"mcp.json", "{\"mcpServers\": {\"r\": {\"url\": \"https://example.com/mcp\", \"transportType\": \"sse\"}}}"}}, nil, `mcp.json:1:57: mcpServers.r.transportType: unknown field
hint: the transport is "type" here: "http", "sse" or "ws"`},
		{"unknown top-level key", [][2]string{{"mcp.json", "{\"server\": {\"fs\": {\"command\": \"x\"}}}"}}, nil, `mcp.json:1:2: server: unknown field
hint: did you mean "servers"?`},
		{"duplicate in one file", [][2]string{{"mcp.json", "{\"servers\": {\n  \"a\": {\"command\": \"x\"},\n  \"a\": {\"command\": \"y\"}\n}}"}}, nil, `mcp.json:3:3: servers.a: duplicate server name "a" (first defined at 2:3)
hint: remove one, or give it another name`},
		{"duplicate field", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x\",\n  \"command\": \"y\"}}}"}}, nil, `mcp.json:2:3: servers.a.command: duplicate field "command" (first defined at 1:20)
hint: remove one of the two`},
		{"UTF-16 with its byte order mark", [][2]string{{"mcp.json", "\xff\xfe{\x00}\x00"}}, nil, `mcp.json:1:1: the file is UTF-16 text, not UTF-8
hint: save it as UTF-8 (Windows PowerShell 5's > writes UTF-16)`},
		{"UTF-16 without one", [][2]string{{"mcp.toml", "\x00[\x00s\x00]\x00"}}, nil, `mcp.toml:1:1: the file is UTF-16 text, not UTF-8
hint: save it as UTF-8 (Windows PowerShell 5's > writes UTF-16)`},
		{"duplicate across files", [][2]string{{"a.json", "{\"servers\": {\n  \"fs\": {\"command\": \"x\"}}}"}, {"b.toml", "[servers.other]\ncommand = \"y\"\n\n[servers.fs]\ncommand = \"z\"\n"}}, nil, `b.toml:4:10: servers.fs: duplicate server name "fs" (also defined at a.json:2:3)
hint: remove one, or give it another name`},
		{"missing command", [][2]string{{"mcp.json", "{\"servers\": {\n  \"fs\": {\"args\": [\"x\"]}}}"}}, nil, `mcp.json:2:9: servers.fs.command: required, but missing
hint: give "command" for a local server, or "url" for a remote one`},
		{"cycle", [][2]string{{"mcp.json", "{\"servers\": {\n  \"a\": {\"command\": \"x\", \"dependsOn\": [\"b\"]},\n  \"b\": {\"command\": \"x\", \"dependsOn\": [\"c\"]},\n  \"c\": {\"command\": \"x\", \"dependsOn\": [\"a\"]}}}"}}, nil, `mcp.json:2:39: servers.a.dependsOn[0]: dependency cycle: a → b → c → a
hint: remove one of these dependencies`},
		{"two cycles, both reported", [][2]string{{"mcp.json", "{\"servers\": {\n  \"g\": {\"command\": \"x\", \"dependsOn\": [\"g\"]},\n  \"h\": {\"command\": \"x\", \"dependsOn\": [\"i\"]},\n  \"i\": {\"command\": \"x\", \"dependsOn\": [\"h\"]}}}"}}, nil, `mcp.json:2:39: servers.g.dependsOn[0]: dependency cycle: g → g
mcp.json:3:39: servers.h.dependsOn[0]: dependency cycle: h → i → h
hint: remove one of these dependencies`},
		{"TOML date", [][2]string{{"mcp.toml", "[servers.a]\ncommand = \"x\"\nargs = [1979-05-27]\n"}}, nil, `mcp.toml:3:9: servers.a.args[0]: a TOML date or time, where text is expected
hint: quote it to make it text`},
		{"TOML date in Codex's own part, left alone", [][2]string{{"config.toml", "seen = 2024-01-01\n[mcp_servers.a]\ncommand = \"x\"\nargs = [07:32:00]\n"}}, nil, `config.toml:4:9: mcp_servers.a.args[0]: a TOML date or time, where text is expected
hint: quote it to make it text`},
		{"input declared twice, ids one variable sets", [][2]string{{"mcp.json", "{\"inputs\": [\n  {\"type\": \"promptString\", \"id\": \"token\"},\n  {\"type\": \"promptString\", \"id\": \"api-key\"},\n  {\"type\": \"promptString\", \"id\": \"token\"},\n  {\"type\": \"promptString\", \"id\": \"API_KEY\"}],\n \"servers\": {\"a\": {\"command\": \"x\"}}}"}}, nil, `mcp.json:4:34: inputs[2].id: duplicate input id "token" (first declared at 2:34)
mcp.json:5:34: inputs[3].id: input id "API_KEY" is set by MCPCTL_INPUT_API_KEY, as "api-key" is (declared at 3:34)
hint: remove one, or give it another id
hint: give one an id that differs in more than case and punctuation`},
		{"pickString without options, default not an option", [][2]string{{"mcp.json", "{\"inputs\": [\n  {\"type\": \"pickString\", \"id\": \"a\"},\n  {\"type\": \"pickString\", \"id\": \"b\", \"options\": []},\n  {\"type\": \"pickString\", \"id\": \"c\", \"options\": [\"s\", \"m\"], \"default\": \"l\"}],\n \"servers\": {\"a\": {\"command\": \"x\"}}}"}}, nil, `mcp.json:2:3: inputs[0]: a pickString input needs options to pick from
mcp.json:3:48: inputs[1].options: a pickString input needs options to pick from
mcp.json:4:71: inputs[2].default: default "l" is not one of the options
hint: list them, e.g. "options": ["small", "large"], or make it a promptString
hint: add it to the options, or choose one of them`},
		{"remote fields on a stdio server, stdio fields on a remote one", [][2]string{{"mcp.json", "{\"defaults\": {\"env\": {\"A\": \"b\"}, \"headers\": {\"X\": \"y\"}},\n \"servers\": {\n  \"a\": {\"command\": \"x\", \"headers\": {\"A\": \"b\"}, \"caFile\": \"c.pem\"},\n  \"r\": {\"url\": \"http://h/mcp\", \"env\": {\"A\": \"b\"}, \"args\": [\"x\"]}}}"}}, nil, `mcp.json:3:25: servers.a.headers: headers is for http, sse and ws servers
mcp.json:3:48: servers.a.caFile: caFile is for http, sse and ws servers
mcp.json:4:32: servers.r.env: env is for stdio servers
mcp.json:4:51: servers.r.args: args is for stdio servers
hint: remove it: a stdio server is run, not reached
hint: remove it: mcpctl does not run a remote server`},
		{"Codex's remote field on a stdio server, by its name", [][2]string{{"config.toml", "[mcp_servers.s]\ncommand = \"x\"\nhttp_headers = {A = \"b\"}\n"}}, nil, `config.toml:3:1: mcp_servers.s.http_headers: http_headers is for http, sse and ws servers
hint: remove it: a stdio server is run, not reached`},
		{"self dependency", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x\", \"dependencies\": [\"a\"]}}}"}}, nil, `mcp.json:1:53: servers.a.dependsOn[0]: dependency cycle: a → a
hint: remove one of these dependencies`},
		{"unknown dependency", [][2]string{{"mcp.json", "{\"servers\": {\n  \"database\": {\"command\": \"x\"},\n  \"api\": {\"command\": \"x\", \"dependsOn\": [\"databse\"]}}}"}}, nil, `mcp.json:3:41: servers.api.dependsOn[0]: unknown server "databse"
hint: did you mean "database"?`},
		{"disabled dependency", [][2]string{{"mcp.json", "{\"servers\": {\"db\": {\"command\": \"x\", \"disabled\": true}, \"api\": {\"command\": \"x\", \"dependsOn\": [\"db\"]}}}"}}, nil, `mcp.json:1:94: servers.api.dependsOn[0]: server "db" is disabled
hint: enable it, or drop the dependency`},
		{"unset variable", [][2]string{{"mcp.json", "{\"servers\": {\"brave\": {\"command\": \"npx\",\n  \"env\": {\"BRAVE_API_KEY\": \"${BRAVE_API_KEY}\"}}}}"}}, nil, `mcp.json:2:28: servers.brave.env.BRAVE_API_KEY: ${BRAVE_API_KEY} is not set
hint: export BRAVE_API_KEY, or give a default: ${BRAVE_API_KEY:-value}`},
		{"unset variable written with env:", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x\", \"args\": [\"${env:pathSeparator}\"]}}}"}}, nil, `mcp.json:1:45: servers.a.args[0]: ${env:pathSeparator} is not set
hint: export pathSeparator, or give a default: ${env:pathSeparator:-value}`},
		{"unset variable in url, not a missing command", [][2]string{{"mcp.json", "{\"servers\": {\"r\": {\"url\": \"https://x/${TOK}\"}, \"c\": {\"command\": \"${NOPE}\"}}}"}}, nil, `mcp.json:1:27: servers.r.url: ${TOK} is not set
mcp.json:1:65: servers.c.command: ${NOPE} is not set
hint: export TOK, or give a default: ${TOK:-value}
hint: export NOPE, or give a default: ${NOPE:-value}`},
		{"bad type value", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"type\": \"grpc\", \"command\": \"x\"}}}"}}, nil, `mcp.json:1:28: servers.a.type: expected one of "stdio", "local", "http", "streamable-http", "streamable_http", "streamableHttp", "remote", "sse", "ws", "websocket", got "grpc"`},
		{"bad URL", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"type\": \"http\", \"url\": \"localhost:8080/mcp\"}}}"}}, nil, `mcp.json:1:43: servers.a.url: expected a URL starting with http:// or https://, got "localhost:8080/mcp"
hint: e.g. http://localhost:8080/mcp`},
		{"URL without a scheme, an address first", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"url\": \"127.0.0.1:39101/mcp\"}}}"}}, nil, `mcp.json:1:27: servers.a.url: expected a URL starting with http://, https://, ws:// or wss://, got "127.0.0.1:39101/mcp"
hint: e.g. http://127.0.0.1:39101/mcp`},
		{"URL with a scheme mistyped", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"url\": \"http:/h/mcp\"}}}"}}, nil, `mcp.json:1:27: servers.a.url: expected a URL starting with http://, https://, ws:// or wss://, got "http:/h/mcp"`},
		{"URL without a scheme, with a user", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"url\": \"me:pw@h:8080/mcp\"}}}"}}, nil, `mcp.json:1:27: servers.a.url: expected a URL starting with http://, https://, ws:// or wss://`},
		{"URL with a space at its end", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"url\": \"http://h/mcp \"}}}"}}, nil, `mcp.json:1:27: servers.a.url: the URL has white space at its start or end
hint: remove it`},
		{"IPv6 URL without brackets", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"url\": \"http://::1:8080/mcp\"}}}"}}, nil, `mcp.json:1:27: servers.a.url: not a URL with a host
hint: an IPv6 address goes in brackets, e.g. http://[::1]:8080/mcp`},
		{"ws URL with http scheme", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"type\": \"ws\", \"url\": \"http://h/mcp\"}}}"}}, nil, `mcp.json:1:41: servers.a.url: expected a URL starting with ws:// or wss://, got "http://h/mcp"`},
		{"url on stdio", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"type\": \"stdio\", \"command\": \"x\", \"url\": \"http://h\"}}}"}}, nil, `mcp.json:1:53: servers.a.url: url is for http, sse and ws servers
hint: a server is run ("command") or reached ("url"): keep one`},
		{"name starting with a dash", [][2]string{{"mcp.json", "{\"servers\": {\"-x\": {\"command\": \"x\"}}}"}}, nil, `mcp.json:1:14: servers.-x: invalid server name: use 1 to 64 ASCII letters, digits, '_' and '-', not starting with '-' (no dots)
hint: e.g. "github" or "my-server"`},
		{"url missing", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"type\": \"sse\"}}}"}}, nil, `mcp.json:1:19: servers.a.url: required, but missing
hint: servers of type sse are reached at "url"`},
		{"both keys", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x\"}},\n \"mcpServers\": {\"b\": {\"command\": \"y\"}}}"}}, nil, `mcp.json:2:2: mcpServers: both "servers" and "mcpServers" are present
hint: keep one: "servers" (VS Code) or "mcpServers" (Claude, Cursor)`},
		{"server name too long", [][2]string{{"mcp.json", "{\"servers\": {\"" + strings.Repeat("n", 65) + "\": {\"command\": \"x\"}}}"}}, nil, `mcp.json:1:14: servers.` + strings.Repeat("n", 65) + `: invalid server name: use 1 to 64 ASCII letters, digits, '_' and '-', not starting with '-' (no dots)
hint: e.g. "github" or "my-server"`},
		{"blank input id", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x\", \"env\": {\"A\": \"${input: }\"}}}}"}}, nil, `mcp.json:1:49: servers.a.env.A: ${input: } names no input
hint: write ${input:ID}, with the id of an input declared in "inputs"`},
		{"empty input id", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x\", \"env\": {\"A\": \"${input:}\"}}}}"}}, nil, `mcp.json:1:49: servers.a.env.A: ${input:} names no input
hint: write ${input:ID}, with the id of an input declared in "inputs"`},
		{"empty file", [][2]string{{"mcp.json", " \n"}}, nil, `mcp.json: the file is empty
hint: a config names its servers: {"servers": {"NAME": {"command": "..."}}}`},
		{"only a byte order mark", [][2]string{{"mcp.json", "\uFEFF\n"}}, nil, `mcp.json: the file is empty
hint: a config names its servers: {"servers": {"NAME": {"command": "..."}}}`},
		{"only comments", [][2]string{{"mcp.json", "// servers to come\n/* later */\n"}}, nil, `mcp.json: the file is empty
hint: a config names its servers: {"servers": {"NAME": {"command": "..."}}}`},
		{"a TOML comment in JSON is not a comment", [][2]string{{"mcp.json", "# servers\n"}}, nil, `mcp.json:1:1: invalid JSON: invalid character '#' at start of value`},
		{"only comments, TOML", [][2]string{{"mcp.toml", "# servers to come\n"}}, nil, `mcp.toml: the file is empty
hint: a config names its servers: [servers.NAME] with command = "..."`},
		{"empty TOML file", [][2]string{{"mcp.toml", ""}}, nil, `mcp.toml: the file is empty
hint: a config names its servers: [servers.NAME] with command = "..."`},
		{"byte order mark", [][2]string{{"mcp.json", "\uFEFF{\"servers\": {\"a\": {\"command\": \"x\", \"agrs\": []}}}"}}, nil, `mcp.json:1:36: servers.a.agrs: unknown field
hint: did you mean "args"?`},
		{"env and header names and values that cannot be passed on", [][2]string{{"mcp.json", "{\"servers\": {\"r\": {\"url\": \"http://h/mcp\", \"headers\": {\"Bad Name\": \"v\", \"X-Ok\": \"a\\nsecret\"}},\n \"e\": {\"command\": \"x\", \"env\": {\"A=B\": \"x\", \"N\": \"a\\u0000secret\"}}}}"}}, nil, `mcp.json:1:55: servers.r.headers.Bad Name: "Bad Name" is not a valid HTTP header name
mcp.json:1:80: servers.r.headers.X-Ok: the value holds a line break or another control character, which an HTTP header cannot carry
mcp.json:2:32: servers.e.env.A=B: "A=B" cannot name an environment variable
mcp.json:2:49: servers.e.env.N: the value holds a NUL byte, which an environment cannot carry
hint: a header's name is letters, digits and !#$%&'*+-.^_` + "`" + `|~: no space or colon
hint: a variable's name is not empty and has no '='`},
		{"a header of the transport's own", [][2]string{{"mcp.json", "{\"servers\": {\"r\": {\"url\": \"http://h/mcp\", \"headers\": {\"X-Ok\": \"a\", \"mcp-session-id\": \"s3cret-session\", \"Mcp-Param-Q\": \"application/json\", \"Sec-WebSocket-Protocol\": \"chat\", \"Accept\": \"application/json\", \"Host\": \"h\"}}}}"}}, nil, `mcp.json:1:68: servers.r.headers.mcp-session-id: header mcp-session-id is the transport's own: mcpctl sets it for each request
mcp.json:1:104: servers.r.headers.Mcp-Param-Q: header Mcp-Param-Q is the transport's own: mcpctl sets it for each request
mcp.json:1:139: servers.r.headers.Sec-WebSocket-Protocol: header Sec-WebSocket-Protocol is the transport's own: mcpctl sets it for each request
mcp.json:1:203: servers.r.headers.Host: header Host cannot be given: it is made from the url and the request's body
hint: take it out: another value would break the connection
hint: take it out`},
		{"bad server name", [][2]string{{"mcp.json", "{\"servers\": {\"a.b\": {\"command\": \"x\"}}}"}}, nil, `mcp.json:1:14: servers.a.b: invalid server name: use 1 to 64 ASCII letters, digits, '_' and '-', not starting with '-' (no dots)
hint: e.g. "github" or "my-server"`},
		{"bad duration", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x\", \"startupTimeout\": \"soon\"}}}"}}, nil, `mcp.json:1:54: servers.a.startupTimeout: expected a duration such as "30s" or "1m30s", or a number of seconds, got "soon"`},
		{"zero duration", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x\", \"requestTimeout\": 0}}}"}}, nil, `mcp.json:1:54: servers.a.requestTimeout: expected a duration above zero, got 0`},
		{"timeout twice", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x\", \"startupTimeout\": \"1s\", \"timeout\": 2}}}"}}, nil, `mcp.json:1:60: servers.a.timeout: timeout is another name for startupTimeout; give one of them`},
		{"raw line break in a string", [][2]string{{"mcp.json", "{\n  \"servers\": {\n    \"a\": {\"command\": \"x\n\"}}}"}}, nil, `mcp.json:3:22: invalid JSON: a string holds a line break or another control character
hint: write it escaped: \n, \t`},
		{"nested too deep", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x\", \"args\": " + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "}}}"}}, nil, `mcp.json:1:73: invalid JSON: nested more than 32 levels deep
hint: a config nests a few levels: servers, a server, its env`},
		{"several problems, all listed", [][2]string{{"mcp.json", "{\"servers\": {\n  \"a\": {\"command\": \"x\", \"args\": [1]},\n  \"b\": {\"command\": \"x\", \"dependsOn\": [\"c\"]}}}"}}, nil, `mcp.json:2:34: servers.a.args[0]: expected string, got number
mcp.json:3:39: servers.b.dependsOn[0]: unknown server "c"
hint: write it in double quotes, as a string: "8080"`},
		{"bad memory size", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x\", \"limits\": {\"memory\": \"lots\"}}}}"}}, nil, `mcp.json:1:57: servers.a.limits.memory: expected a size such as "512MiB" or "1G", or a number of bytes, got "lots"`},
		{"whole number too large", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x\", \"maxRestarts\": 1e30}}}"}}, nil, `mcp.json:1:51: servers.a.maxRestarts: expected a whole number from 0 to 2147483647, got 1e30`},
		{"unknown limit", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x\", \"limits\": {\"memroy\": \"1G\"}}}}"}}, nil, `mcp.json:1:47: servers.a.limits.memroy: unknown field
hint: did you mean "memory"?`},
		{"missing envFile", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x\", \"envFile\": \".env.missing\"}}}"}}, nil, `mcp.json:1:47: servers.a.envFile: cannot read $DIR/.env.missing: no such file or directory`},
		{"bad envFile line", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x\", \"envFile\": \".env\"}}}"}, {".env", "OK=1\nnot a line\n"}}, nil, `mcp.json:1:47: servers.a.envFile: $DIR/.env:2: expected KEY=VALUE, KEY of letters, digits and _ not starting with a digit`},
		{"bad glob", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x\", \"includeTools\": [\"read_*\", \"[bad\"]}}}"}}, nil, `mcp.json:1:63: servers.a.includeTools[1]: "[bad" is not a valid glob
hint: use * and ? and [a-z]`},
		{"bad protocol version", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x\", \"protocolVersion\": \"2025-01-01\"}}}"}}, nil, `mcp.json:1:55: servers.a.protocolVersion: expected one of "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28", got "2025-01-01"`},
		{"negative maxRestarts", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x\", \"maxRestarts\": -1}}}"}}, nil, `mcp.json:1:51: servers.a.maxRestarts: must be >= 0, got -1`},
		{"env value not a string", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x\", \"env\": {\"PORT\": 8080}}}}"}}, nil, `mcp.json:1:52: servers.a.env.PORT: expected string, got number
hint: write it in double quotes, as a string: "8080"`},
		{"one input id declared otherwise in two files", [][2]string{
			{"mcp.json", `{"inputs": [{"id": "k", "type": "pickString", "options": ["x", "y"], "default": "x"}], "servers": {"a": {"command": "x"}}}`},
			{"more.json", `{"inputs": [{"id": "k", "type": "promptString", "password": true}], "servers": {"b": {"command": "x"}}}`}}, nil,
			`more.json:1:20: inputs[0].id: input id "k" is declared otherwise in mcp.json:1:20 (default, options, password, type); ${input:k} has one value for both files
hint: declare it alike in both, or give one another id`},
		{"undeclared input", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x\", \"env\": {\"K\": \"${input:api-key}\"}}}}"}}, nil, `mcp.json:1:49: servers.a.env.K: ${input:api-key} refers to an input that "inputs" does not declare
hint: declare it in "inputs", or set MCPCTL_INPUT_API_KEY`},
		{"input without value", [][2]string{{"mcp.json", "{\"inputs\": [{\"id\": \"api-key\", \"type\": \"promptString\", \"password\": true}],\n \"servers\": {\"a\": {\"command\": \"x\", \"env\": {\"K\": \"${input:api-key}\"}}}}"}}, nil, `mcp.json:2:49: servers.a.env.K: ${input:api-key} has no value
hint: set MCPCTL_INPUT_API_KEY, or run mcpctl on a terminal to be asked`},
		{"no servers", [][2]string{{"mcp.json", "{\"servers\": {}}"}}, nil, `mcp.json: no servers defined
hint: add a server under "servers", e.g. {"servers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]}}}`},
		{"unknown default field", [][2]string{{"mcp.json", "{\"defaults\": {\"startuptimeout\": \"1s\"}, \"servers\": {\"a\": {\"command\": \"x\"}}}"}}, nil, `mcp.json:1:15: defaults.startuptimeout: unknown field
hint: did you mean "startupTimeout"?`},
		{"TOML syntax", [][2]string{{"mcp.toml", "[servers.a]\ncommand = \"x\nargs = []\n"}}, nil, `mcp.toml:2:13: invalid TOML: basic strings cannot have new lines`},
		{"TOML wrong type", [][2]string{{"mcp.toml", "[servers.a]\ncommand = \"x\"\nargs = [\"a\", 7]\n"}}, nil, `mcp.toml:3:14: servers.a.args[1]: expected string, got number
hint: write it in double quotes, as a string: "8080"`},
		{"Codex unknown field", [][2]string{{"config.toml", "[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_secs = 10\n"}}, nil, `config.toml:3:1: mcp_servers.a.startup_timeout_secs: unknown field
hint: did you mean "startup_timeout_sec"?`},
		{"Codex bearer token unset", [][2]string{{"config.toml", "[mcp_servers.a]\nurl = \"https://x.example/mcp\"\nhttp_headers = { X-A = \"1\" }\nbearer_token_env_var = \"NOPE_TOKEN\"\n"}}, nil, `config.toml:4:24: mcp_servers.a.bearer_token_env_var: ${NOPE_TOKEN} is not set
hint: export NOPE_TOKEN (bearer_token_env_var names it)`},
		{"Codex server not a table", [][2]string{{"config.toml", "[mcp_servers]\nbad = \"npx\"\n"}}, nil, `config.toml:2:7: mcp_servers.bad: expected a table, got string
hint: give the server a table: [mcp_servers.bad] with command = "..."`},
		{"Codex http_headers not a table", [][2]string{{"config.toml", "[mcp_servers.gh]\nurl = \"https://x.example/mcp\"\nhttp_headers = \"Authorization: Bearer ghp_secret123\"\n"}}, nil, `config.toml:3:16: mcp_servers.gh.http_headers: expected a table of header names and values, got string
hint: e.g. http_headers = { Authorization = "Bearer ${GITHUB_TOKEN}" }`},
		{"Codex header variable unset", [][2]string{{"config.toml", "[mcp_servers.a]\nurl = \"https://x.example/mcp\"\nhttp_headers = { X-A = \"1\" }\nenv_http_headers = { X-Key = \"NOPE_KEY\" }\n"}}, nil, `config.toml:4:30: mcp_servers.a.env_http_headers.X-Key: ${NOPE_KEY} is not set
hint: export NOPE_KEY (env_http_headers names it)`},
		{"Codex enabled not a boolean", [][2]string{{"config.toml", "[mcp_servers.a]\ncommand = \"x\"\nenabled = \"false\"\n"}}, nil, `config.toml:3:11: mcp_servers.a.enabled: expected true or false, got string`},
		{"Codex timeout in ms not a number", [][2]string{{"config.toml", "[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_ms = \"5000\"\n"}}, nil, `config.toml:3:22: mcp_servers.a.startup_timeout_ms: expected a number of milliseconds, got string
hint: e.g. startup_timeout_ms = 20000`},
		{"Codex timeout in ms over a day", [][2]string{{"config.toml", "[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_ms = 100000000\n"}}, nil, `config.toml:3:22: mcp_servers.a.startup_timeout_ms: expected a number of milliseconds above zero, at most 86400000 (24h), got 100000000
hint: e.g. startup_timeout_ms = 20000`},
		{"Codex timeout in ms zero", [][2]string{{"config.toml", "[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_ms = 0\n"}}, nil, `config.toml:3:22: mcp_servers.a.startup_timeout_ms: expected a number of milliseconds above zero, at most 86400000 (24h), got 0
hint: e.g. startup_timeout_ms = 20000`},
		{"duration under a nanosecond", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x\", \"requestTimeout\": 1e-10}}}"}}, nil, `mcp.json:1:54: servers.a.requestTimeout: expected a duration of at least 1ns (0.000000001 seconds), got 1e-10`},
		{"duration under a nanosecond, with a unit", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x\", \"idleTimeout\": \"0.0000000001s\"}}}"}}, nil, `mcp.json:1:51: servers.a.idleTimeout: expected a duration of at least 1ns (0.000000001 seconds), got "0.0000000001s"`},
		{"Codex both startup timeouts", [][2]string{{"config.toml", "[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_sec = 10\nstartup_timeout_ms = 2000\n"}}, nil, `config.toml:4:22: mcp_servers.a.startup_timeout_ms: startup_timeout_sec says the same
hint: keep one of startup_timeout_sec and startup_timeout_ms`},
		{"Codex bearer token on a stdio server", [][2]string{{"config.toml", "[mcp_servers.a]\ncommand = \"x\"\nbearer_token_env_var = \"TOK\"\n"}}, map[string]string{"TOK": "t"}, `config.toml:3:1: mcp_servers.a.bearer_token_env_var: bearer_token_env_var is for http, sse and ws servers
hint: remove it: a stdio server is run, not reached`},
		{"Codex bearer token not a variable name", [][2]string{{"config.toml", "[mcp_servers.a]\nurl = \"https://x.example/mcp\"\nbearer_token_env_var = \"${TOK}\"\n"}}, nil, `config.toml:3:24: mcp_servers.a.bearer_token_env_var: expected the name of an environment variable, got "${TOK}" (the name alone, without ${})
hint: e.g. bearer_token_env_var = "GITHUB_TOKEN"`},
		{"Codex token where its variable goes", [][2]string{{"config.toml", "[mcp_servers.a]\nurl = \"https://x.example/mcp\"\nbearer_token_env_var = \"sk-live-123\"\n"}}, nil, `config.toml:3:24: mcp_servers.a.bearer_token_env_var: expected the name of an environment variable, got a string that is not a variable name (not shown: it may be the token itself)
hint: e.g. bearer_token_env_var = "GITHUB_TOKEN"`},
		{"Codex header variable not a name", [][2]string{{"config.toml", "[mcp_servers.a]\nurl = \"https://x.example/mcp\"\nenv_http_headers = { X-K = 5 }\n"}}, nil, `config.toml:3:28: mcp_servers.a.env_http_headers.X-K: expected the name of an environment variable, got number
hint: e.g. env_http_headers = { X-Api-Key = "API_KEY" }`},
		{"negative duration", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x\", \"requestTimeout\": -5}}}"}}, nil, `mcp.json:1:54: servers.a.requestTimeout: expected a duration above zero, got -5`},
		{"TOML with Codex's table and mcp.toml's", [][2]string{{"mixed.toml", "model = \"o3\"\n[mcp_servers.a]\ncommand = \"x\"\n[servers.b]\ncommand = \"x\"\n"}}, nil, `mixed.toml:4:2: servers: both [mcp_servers] (Codex) and [servers] are present
hint: keep one: [mcp_servers.NAME] (Codex's config.toml) or [servers.NAME] (mcp.toml)`},
		{"Codex servers not a table", [][2]string{{"config.toml", "mcp_servers = 5\n"}}, nil, `config.toml:1:1: mcp_servers: expected a table of servers, got number
hint: give each server a table: [mcp_servers.NAME] with command = "..."`},
		{"enum value near an allowed one", [][2]string{{"mcp.json", `{"servers": {"a": {"command": "x", "activation": "lazzy"}}}`}}, nil, `mcp.json:1:50: servers.a.activation: expected one of "eager", "lazy", "manual", "transient", got "lazzy"
hint: did you mean "lazy"?`},
		{"Codex wrong type", [][2]string{{"config.toml", "[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_sec = \"ten\"\n"}}, nil, `config.toml:3:23: mcp_servers.a.startup_timeout_sec: expected a duration such as "30s" or "1m30s", or a number of seconds, got "ten"`},
		// Codex: an Authorization two fields set is an error naming both,
		// not the one a map's order chose; an empty token variable is as
		// unset.
		{"Codex bearer token and an Authorization header", [][2]string{{"config.toml", "[mcp_servers.r]\nurl = \"https://h/mcp\"\nbearer_token_env_var = \"TOK\"\nhttp_headers = { Authorization = \"Bearer other\" }\n"}}, map[string]string{"TOK": "abc"}, `config.toml:3:24: mcp_servers.r.bearer_token_env_var: http_headers and bearer_token_env_var both set the Authorization header
hint: keep one of them`},
		{"Codex bearer token variable empty", [][2]string{{"config.toml", "[mcp_servers.r]\nurl = \"https://h/mcp\"\nbearer_token_env_var = \"TOK\"\n"}}, map[string]string{"TOK": ""}, `config.toml:3:24: mcp_servers.r.bearer_token_env_var: ${TOK} is set, but empty
hint: set TOK to the token (bearer_token_env_var names it)`},
		// A URL net/url refuses, or a dialer would, says why.
		{"URL port out of range", [][2]string{{"mcp.json", `{"servers": {"a": {"url": "http://127.0.0.1:99999/x"}}}`}}, nil, `mcp.json:1:27: servers.a.url: the URL's port 99999 is out of range: a port is from 1 to 65535`},
		{"URL port not a number", [][2]string{{"mcp.json", `{"servers": {"a": {"url": "http://127.0.0.1:abc/x"}}}`}}, nil, `mcp.json:1:27: servers.a.url: the URL's port is not a number from 1 to 65535
hint: e.g. :8080 after the host`},
		{"URL with a space in its host", [][2]string{{"mcp.json", `{"servers": {"a": {"url": "http://exa mple.com/x"}}}`}}, nil, `mcp.json:1:27: servers.a.url: the URL's host holds a space
hint: remove it; in the path, write a space as %20`},
		{"URL with a bad escape", [][2]string{{"mcp.json", `{"servers": {"a": {"url": "https://h/a b%zz"}}}`}}, nil, `mcp.json:1:27: servers.a.url: the URL holds a % that does not start an escape (% and two hex digits)
hint: write a % itself as %25`},
		{"URL with a scheme misspelt, and a space", [][2]string{{"mcp.json", `{"servers": {"a": {"url": "htp://foo bar"}}}`}}, nil, `mcp.json:1:27: servers.a.url: expected a URL starting with http://, https://, ws:// or wss://, got "htp://foo bar"
hint: did you mean http://?`},
		{"not a URL at all", [][2]string{{"mcp.json", `{"servers": {"a": {"url": "not a url"}}}`}}, nil, `mcp.json:1:27: servers.a.url: expected a URL starting with http://, https://, ws:// or wss://, got "not a url"
hint: write the server's address, e.g. http://localhost:8080/mcp`},
		// What the schema takes, validate takes: zero where above zero is
		// wanted is said so.
		{"zero durations and sizes", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"x\",\n  \"idleTimeout\": \"0s\",\n  \"healthCheck\": {\"interval\": 0},\n  \"limits\": {\"memory\": \"0\", \"cpuTime\": \"0m0s\"},\n  \"cacheTTL\": -1}}}"}}, nil, `mcp.json:2:18: servers.a.idleTimeout: expected a duration above zero, got "0s"
mcp.json:3:31: servers.a.healthCheck.interval: expected a duration above zero, got 0
mcp.json:4:24: servers.a.limits.memory: expected a size above zero, got "0"
mcp.json:4:40: servers.a.limits.cpuTime: expected a duration above zero, got "0m0s"
mcp.json:5:15: servers.a.cacheTTL: expected a duration of 0 or more, got -1`},
		{"duration too long, as a number", [][2]string{{"mcp.json", `{"servers": {"a": {"command": "x", "startupTimeout": 90000}}}`}}, nil, `mcp.json:1:54: servers.a.startupTimeout: expected a duration of at most 24h, got 90000`},
		{"duration too long, as a string", [][2]string{{"mcp.json", `{"servers": {"a": {"command": "x", "requestTimeout": "48h"}}}`}}, nil, `mcp.json:1:54: servers.a.requestTimeout: expected a duration of at most 24h, got "48h"`},
		// Hints that fit the field and the value.
		{"hints fit the value", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"node\",\n  \"env\": {\"A\": true},\n  \"maxRestarts\": 2.5,\n  \"inheritEnv\": \"yes\"},\n \"b\": {\"command\": \"node\", \"disabledTools\": [\"x\"]}}}"}}, nil, `mcp.json:2:16: servers.a.env.A: expected string, got boolean
mcp.json:3:18: servers.a.maxRestarts: expected integer, got number
mcp.json:4:17: servers.a.inheritEnv: expected boolean or array, got string
mcp.json:5:27: servers.b.disabledTools: unknown field
hint: write it in double quotes, as a string: "true"
hint: write a whole number, without a fraction
hint: write true or false, without quotes, or a list: ["AWS_*", "HTTPS_PROXY"]
hint: did you mean "excludeTools"? (globs of the tools to hide)`},
		{"Codex's own name, for another client's", [][2]string{{"config.toml", "[mcp_servers.a]\ncommand = \"x\"\ndisabledTools = [\"y\"]\n"}}, nil, `config.toml:3:1: mcp_servers.a.disabledTools: unknown field
hint: did you mean "disabled_tools"?`},
		// TOML's mistakes, said with what to do.
		{"TOML string not quoted", [][2]string{{"mcp.toml", "[servers.a]\ncommand = node\n"}}, nil, `mcp.toml:2:11: invalid TOML: a value that is not quoted (a string needs quotes)
hint: write strings in double quotes: command = "node"; true, false and numbers go bare`},
		{"TOML backslash", [][2]string{{"mcp.toml", "[servers.a]\ncommand = \"C:\\Users\\me\"\n"}}, nil, `mcp.toml:2:16: invalid TOML: a string holds a backslash that is not a TOML escape
hint: write a backslash as \\ ("C:\\Users\\me"), or quote with single quotes, which take every character as written ('C:\Users\me')`},
		{"TOML table twice", [][2]string{{"mcp.toml", "[servers.a]\ncommand = \"x\"\n\n[servers.a]\ncommand = \"y\"\n"}}, nil, `mcp.toml:4:2: servers.a: invalid TOML: table [servers.a] is defined twice (first at 1:2)
hint: remove one, or give it another name`},
		{"TOML field twice in an inline table", [][2]string{{"mcp.toml", "[servers.a]\ncommand = \"x\"\nenv = { A = \"1\", B = \"2\", A = \"3\" }\n"}}, nil, `mcp.toml:3:27: servers.a.env.A: invalid TOML: duplicate field "A"
hint: remove one of the two`},
		{"TOML field twice", [][2]string{{"mcp.toml", "[servers.a]\ncommand = \"x\"\ncommand = \"y\"\n"}}, nil, `mcp.toml:3:1: servers.a.command: invalid TOML: duplicate field "command"
hint: remove one of the two`},
		{"TOML column in characters", [][2]string{{"mcp.toml", "[servers.a]\nargs = [\"é\", x]\n"}}, nil, `mcp.toml:2:14: invalid TOML: a value that is not quoted (a string needs quotes)
hint: write strings in double quotes: command = "node"; true, false and numbers go bare`},
		// Bytes that are not UTF-8 would reach the server as U+FFFD.
		{"not UTF-8, JSON", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"node\",\n  \"args\": [\"caf\xe9\"]}}}"}}, nil, `mcp.json:2:16: the file is not UTF-8 text: a byte here is not UTF-8
hint: save it as UTF-8 (it may be Latin-1 or Windows-1252); a value that is not text cannot be passed in a config`},
		{"lone surrogate escape", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"node\", // \\ud800 in a comment is no matter\n  \"args\": [\"\\\\ud800 is text\", \"a\\ud83d\\ude00\", \"x\\ud800\"]}}}"}}, nil, `mcp.json:2:50: invalid JSON: \ud800 is half of a UTF-16 surrogate pair, which is no character
hint: write the character itself, or both halves of its pair (\ud83d\ude00 for 😀)`},
		{"second half of a surrogate pair alone", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"\\udc00\"}}}"}}, nil, `mcp.json:1:32: invalid JSON: \udc00 is half of a UTF-16 surrogate pair, which is no character
hint: write the character itself, or both halves of its pair (\ud83d\ude00 for 😀)`},
		{"first half followed by another escape", [][2]string{{"mcp.json", "{\"servers\": {\"a\": {\"command\": \"\\ud800\\u0041\"}}}"}}, nil, `mcp.json:1:32: invalid JSON: \ud800 is half of a UTF-16 surrogate pair, which is no character
hint: write the character itself, or both halves of its pair (\ud83d\ude00 for 😀)`},
		{"not UTF-8, TOML", [][2]string{{"mcp.toml", "[servers.a]\ncommand = \"node\" # caf\xe9\n"}}, nil, `mcp.toml:2:23: the file is not UTF-8 text: a byte here is not UTF-8
hint: save it as UTF-8 (it may be Latin-1 or Windows-1252); a value that is not text cannot be passed in a config`},
		// The format is the name's: a file in another one says so.
		{"TOML in a file read as JSON", [][2]string{{"conf.txt", "# servers\n[servers.a]\ncommand = \"x\"\n"}}, nil, `conf.txt:1:1: invalid JSON: invalid character '#' at start of value
hint: this looks like TOML, which mcpctl reads only from a file named .toml; conf.txt is read as JSON`},
		{"YAML", [][2]string{{"x.yaml", "servers:\n  a:\n    command: x\n"}}, nil, `x.yaml:1:1: invalid JSON: a word that is not quoted (a key or a value)
hint: mcpctl does not read YAML: write the config as JSON (a .json file) or TOML (a .toml file)`},
		{"JSON in a file read as TOML", [][2]string{{"mcp.toml", `{"servers": {"a": {"command": "x"}}}`}}, nil, `mcp.toml:1:1: invalid TOML: invalid character at start of key: U+007B '{'
hint: this looks like JSON, which mcpctl reads from a file not named .toml; mcp.toml is read as TOML`},
		{"servers under a misspelt key", [][2]string{{"mcp.json", `{"sever": {"a": {"command": "x"}}}`}}, nil, `mcp.json:1:2: sever: unknown field
hint: did you mean "servers"?`},
		{"a size not whole", [][2]string{{"mcp.json", `{"servers": {"a": {"command": "x", "limits": {"memory": 1.5}}}}`}}, nil, `mcp.json:1:57: servers.a.limits.memory: expected string or integer, got number
hint: write a size such as "512MiB", or a whole number of bytes`},
		{"a size of a unit not known", [][2]string{{"mcp.json", `{"servers": {"a": {"command": "x", "limits": {"memory": "1Gi"}}}}`}}, nil, `mcp.json:1:57: servers.a.limits.memory: expected a size such as "512MiB" or "1G", or a number of bytes, got "1Gi"`},
		{"a boolean for a duration", [][2]string{{"mcp.json", `{"servers": {"a": {"command": "x", "startupTimeout": true}}}`}}, nil, `mcp.json:1:54: servers.a.startupTimeout: expected string or number, got boolean
hint: write a duration such as "30s", or a number of seconds`},
		{"a number for a URL", [][2]string{{"mcp.json", `{"servers": {"a": {"url": 5}}}`}}, nil, `mcp.json:1:27: servers.a.url: expected string, got number
hint: write the server's address in double quotes: "http://localhost:8080/mcp"`},
		{"a URL without its scheme's colon", [][2]string{{"mcp.json", `{"servers": {"a": {"url": "http//localhost:8080/mcp"}}}`}}, nil, `mcp.json:1:27: servers.a.url: expected a URL starting with http://, https://, ws:// or wss://, got "http//localhost:8080/mcp"
hint: did you mean http://localhost:8080/mcp?`},
		{"Codex header named twice in other cases", [][2]string{{"config.toml", "[mcp_servers.r]\nurl = \"https://h/mcp\"\nhttp_headers = { X-Key = \"a\", x-key = \"b\" }\n"}}, nil, `config.toml:3:39: mcp_servers.r.http_headers.x-key: X-Key and x-key are one header: header names do not differ by case
hint: keep one of them`},
		{"a duration in quotes without a unit", [][2]string{{"mcp.json", `{"servers": {"a": {"command": "x", "startupTimeout": "30"}}}`}}, nil, `mcp.json:1:54: servers.a.startupTimeout: expected a duration such as "30s" or "1m30s", or a number of seconds, got "30"
hint: write 30 without quotes (seconds), or with a unit: "30s"`},
		{"a duration in days", [][2]string{{"mcp.json", `{"servers": {"a": {"command": "x", "startupTimeout": "1d"}}}`}}, nil, `mcp.json:1:54: servers.a.startupTimeout: expected a duration such as "30s" or "1m30s", or a number of seconds, got "1d"
hint: days are not a unit: write hours, e.g. "24h" (at most 24h)`},
		// The server itself is never the dependency suggested: a cycle.
		{"unknown dependency near the server's own name", [][2]string{{"mcp.json", `{"servers": {"a": {"command": "x", "dependsOn": ["aa"]}, "b": {"command": "x"}}}`}}, nil, `mcp.json:1:50: servers.a.dependsOn[0]: unknown server "aa"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var paths []string
			for _, f := range tc.files {
				p := filepath.Join(dir, f[0])
				if err := os.WriteFile(p, []byte(f[1]), 0o644); err != nil {
					t.Fatal(err)
				}
				if filepath.Ext(f[0]) != "" && f[0][0] != '.' {
					paths = append(paths, p)
				}
			}
			_, err := LoadFiles(paths, Options{LookupEnv: env(tc.env), WorkDir: dir})
			if err == nil {
				t.Fatal("no error")
			}
			got := err.Error()
			if h, ok := err.(interface{ Hints() []string }); ok {
				for _, l := range h.Hints() {
					got += "\nhint: " + l
				}
			}
			if want := strings.ReplaceAll(tc.want, "$DIR", dir); got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// Files are read as their clients read them, each on its own: two files
// may each declare the input they use, with one id, and one value serves
// both.
func TestInputIDInTwoFiles(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for _, name := range []string{"a.json", "b.json"} {
		p := filepath.Join(dir, name)
		body := `{"inputs": [{"type": "promptString", "id": "token"}], "servers": {"` + name[:1] + `": {"command": "x", "env": {"T": "${input:token}"}}}}`
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	cfg, err := LoadFiles(paths, Options{LookupEnv: env(map[string]string{"MCPCTL_INPUT_TOKEN": "t0"}), WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range cfg.Servers {
		if s.Env["T"] != "t0" {
			t.Errorf("server %s: T=%q, want t0", s.Name, s.Env["T"])
		}
	}
}

// A dependency cycle is reported beside an unknown dependency elsewhere in
// the file, and a server with no command gets one error, not two.
func TestErrorsTogether(t *testing.T) {
	_, err := loadFile(t, "mcp.json", `{"servers": {
  "b": {"command": "sh", "dependsOn": ["zzz"]},
  "f": {"command": "sh", "dependsOn": ["g"]},
  "g": {"command": "sh", "dependsOn": ["f"]},
  "h": {"type": "stdio"}
}}`, nil)
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("%v", err)
	}
	got := errs.Error()
	for _, want := range []string{`unknown server "zzz"`, "dependency cycle: f → g → f", "servers.h.command: required, but missing"} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "command not found") {
		t.Errorf("a missing command is also 'not found':\n%s", got)
	}
}

// A disabled server is never started: a variable or input it names that
// is not set stops nothing, and is not asked for.
func TestDisabledServerNeedsNoVariables(t *testing.T) {
	cfg, err := loadFile(t, "mcp.json", `{"inputs": [{"id": "key", "type": "promptString"}],
  "servers": {"on": {"command": "sh"},
  "off": {"command": "sh", "disabled": true, "env": {"K": "${UNSET_VAR_X}", "I": "${input:key}"}}}}`, nil)
	if err != nil {
		t.Fatalf("a disabled server's unset variable: %v", err)
	}
	if len(cfg.Servers) != 2 {
		t.Errorf("servers: %d", len(cfg.Servers))
	}
	if _, err := loadFile(t, "mcp.json", `{"servers": {"on": {"command": "sh", "env": {"K": "${UNSET_VAR_X}"}}}}`, nil); err == nil {
		t.Error("an enabled server's unset variable: no error")
	}
}

// A server that starts with the session cannot depend on one that starts
// only by hand: it would start without it. One started on use may (it
// fails, saying so, while the other is not running).
func TestDependsOnManual(t *testing.T) {
	_, err := loadFile(t, "mcp.json", `{"servers": {"a": {"command": "sh", "dependsOn": ["m"]}, "m": {"command": "sh", "activation": "manual"}}}`, nil)
	if err == nil || !strings.Contains(err.Error(), `server "m" starts only by hand (activation manual), and a starts with the session, before it`) {
		t.Errorf("an eager server on a manual one: %v", err)
	}
	for _, act := range []string{"manual", "lazy", "transient"} {
		if _, err := loadFile(t, "mcp.json", `{"servers": {"a": {"command": "sh", "activation": "`+act+`", "dependsOn": ["m"]}, "m": {"command": "sh", "activation": "manual"}}}`, nil); err != nil {
			t.Errorf("a %s server on a manual one: %v", act, err)
		}
	}
}

// An empty path is refused as one; filepath.Abs made it the working
// directory, "config file . is a directory".
func TestLoadEmptyPath(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "mcp.json"), []byte(`{"servers":{}}`), 0o644)
	_, err := Load("", Options{WorkDir: dir})
	var nf *NotFoundError
	if !errors.As(err, &nf) || nf.Path != "" || err.Error() != "--config is given an empty path" {
		t.Errorf("Load(\"\"): %v", err)
	}
}

// Offsets outside the data are clamped; a negative one panicked.
func TestLineColOutside(t *testing.T) {
	data := []byte("ab\ncd")
	for _, c := range []struct{ off, line, col int }{{-1, 1, 1}, {0, 1, 1}, {4, 2, 2}, {99, 2, 3}} {
		if l, col := LineCol(data, c.off); l != c.line || col != c.col {
			t.Errorf("LineCol(%d) = %d:%d, want %d:%d", c.off, l, col, c.line, c.col)
		}
	}
}

// Positions found from the file's lines, once, are those a scan from the
// file's start finds, at every offset, across ASCII and other lines.
func TestPositionsMatchScan(t *testing.T) {
	data := []byte("{\n  \"a\": \"é€😀\",\n\n\"b\": 1}\r\nx\n")
	p := newPositions(data)
	// In file order, then backwards: a place before the last one found on
	// its line is counted from the line's start.
	offs := []int{}
	for off := -1; off <= len(data)+1; off++ {
		offs = append(offs, off)
	}
	for off := len(data) + 1; off >= -1; off-- {
		offs = append(offs, off)
	}
	for _, off := range offs {
		o := min(max(off, 0), len(data))
		line, last := 1, 0
		for i := 0; i < o; i++ {
			if data[i] == '\n' {
				line, last = line+1, i+1
			}
		}
		col := utf8.RuneCount(data[last:o]) + 1
		if l, c := p.at(off); l != line || c != col {
			t.Errorf("at(%d) = %d:%d, want %d:%d", off, l, c, line, col)
		}
	}
}

// BenchmarkValidateManyServers loads a generated config of 5,000 servers
// written on one line, each depending on the one before. Placing each
// server by a scan from the file's start made it quadratic: 3.6 s an op, 0.21 s since.
func BenchmarkValidateManyServers(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"servers":{"e":{"command":"true","env":{"X":"é"}},`) // a line not ASCII
	for i := range 5000 {
		if i > 0 {
			fmt.Fprintf(&sb, `,"s%d":{"command":"true","dependsOn":["s%d"]}`, i, i-1)
		} else {
			sb.WriteString(`"s0":{"command":"true"}`)
		}
	}
	sb.WriteString(`}}`)
	path := filepath.Join(b.TempDir(), "mcp.json")
	if err := os.WriteFile(path, []byte(sb.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, problems, err := Validate([]string{path}, Options{}); err != nil || len(problems) > 0 {
			b.Fatal(err, problems)
		}
	}
}

// In Claude's shape another top-level key is the app's: servers parked
// under one (to turn them off) leave the file valid, its servers read.
func TestClaudeShapeKeepsParkedServers(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "claude_desktop_config.json")
	os.WriteFile(p, []byte(`{"mcpServers": {"a": {"command": "x"}}, "context_servers": {"x": {"command": "y"}}}`), 0o644)
	cfg, err := Load(p, Options{LookupEnv: env(nil), WorkDir: dir})
	if err != nil || len(cfg.Servers) != 1 || cfg.Servers[0].Name != "a" {
		t.Fatalf("%v %+v", err, cfg)
	}
}

// Codex's env_http_headers win over its http_headers, as in Codex, a
// header's name in any case: no error, one header.
func TestCodexEnvHeadersOverHTTPHeaders(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, ".codex", "config.toml")
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte("[mcp_servers.r]\nurl = \"https://h/mcp\"\nhttp_headers = { x-key = \"1\", X-Other = \"o\" }\nenv_http_headers = { X-Key = \"K\" }\n"), 0o644)
	cfg, err := Load(p, Options{LookupEnv: env(map[string]string{"K": "2"}), WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if h := cfg.Servers[0].Headers; len(h) != 2 || h["X-Key"] != "2" || h["X-Other"] != "o" {
		t.Errorf("headers %v, want X-Key 2 (env_http_headers) and X-Other o", h)
	}
	// Its variable unset or blank, http_headers' value stays, as in Codex.
	for _, vars := range []map[string]string{nil, {"K": ""}} {
		cfg, err := Load(p, Options{LookupEnv: env(vars), WorkDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if h := cfg.Servers[0].Headers; h["X-Key"] != "1" {
			t.Errorf("K %v: headers %v, want X-Key 1 (http_headers)", vars, h)
		}
	}
}
