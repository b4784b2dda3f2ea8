package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/internal/testutil"
)

func TestCheckPeer(t *testing.T) {
	if err := checkPeer(peerCred{UID: 1000, PID: 42}, 1000); err != nil {
		t.Errorf("the owner was refused: %v", err)
	}
	err := checkPeer(peerCred{UID: 1001, PID: 42}, 1000)
	if err == nil || err.Error() != "refused a connection from uid 1001 (pid 42): this session belongs to uid 1000 and serves no other user" {
		t.Errorf("another uid: %v", err)
	}
	// root is another user too: the session is its owner's alone.
	if err := checkPeer(peerCred{UID: 0}, 1000); err == nil || !strings.Contains(err.Error(), "from uid 0:") {
		t.Errorf("root as peer: %v", err)
	}
	// A peer the kernel cannot name is refused, whatever UID says.
	err = checkPeer(peerCred{UID: 1000, Err: errors.New("SO_PEERCRED: bad file descriptor")}, 1000)
	if err == nil || !strings.Contains(err.Error(), "cannot tell which user made it (SO_PEERCRED: bad file descriptor)") {
		t.Errorf("unknown peer: %v", err)
	}
}

// testSession returns a session whose runtime directory is rt.
func testSession(t *testing.T, rt string) *Session {
	t.Helper()
	s, err := SessionFor(nil, "sec", func(k string) string {
		if k == "MCPCTL_RUNTIME_DIR" {
			return rt
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSocketPermissions(t *testing.T) {
	dir, err := os.MkdirTemp("", "mcperm")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// Whatever the umask, and even in a directory made open beforehand.
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	rt := filepath.Join(dir, "rt")
	if err := os.Mkdir(rt, 0o777); err != nil {
		t.Fatal(err)
	}
	s := testSession(t, rt)
	ln, release, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	defer ln.Close()
	dst, err := os.Lstat(rt)
	if err != nil || dst.Mode().Perm() != 0o700 || !dst.IsDir() {
		t.Errorf("runtime dir: %v %v, want a 0700 directory", dst.Mode(), err)
	}
	st, err := os.Lstat(s.Socket)
	if err != nil || st.Mode().Perm() != 0o600 || st.Mode().Type() != os.ModeSocket {
		t.Errorf("socket: %v %v, want a 0600 socket", st.Mode(), err)
	}

	// A runtime directory that is a symbolic link is refused.
	link := filepath.Join(dir, "link")
	if err := os.Symlink(rt, link); err != nil {
		t.Fatal(err)
	}
	if _, _, err := testSession(t, link).Listen(); err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
		t.Errorf("symlinked runtime dir: %v", err)
	}
}

// dialSocketEnv makes the test binary (see TestMain) dial the socket it
// names, ask for the status and print what happened, then exit.
const dialSocketEnv = "MCPCTL_TEST_DIAL_SOCKET"

func dialAndReport(socket string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := (&Client{Socket: socket}).Status(ctx)
	if err == nil {
		fmt.Println("ok")
		return 0
	}
	fmt.Printf("%s\n%s\n", KindOf(err), err)
	var e *Error
	if errors.As(err, &e) {
		for _, h := range e.Hint {
			fmt.Println("hint: " + h)
		}
	}
	return 1
}

// TestOtherUserRefused connects to a live session's socket as another uid
// (nobody, 65534), for real: first through the 0700 directory and 0600
// socket, which the kernel refuses; then with both opened up, so only the
// session's own check of the peer's uid stands in the way.
func TestOtherUserRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a process of another uid is started with setuid, which only root may do (TestCheckPeer covers the check itself)")
	}
	dir, err := os.MkdirTemp("", "mcpeer")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	// The test binary, where nobody may run it (go test keeps it in a
	// 0700 directory).
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dialer := filepath.Join(dir, "dialer")
	copyFile(t, exe, dialer, 0o755)

	s := testSession(t, filepath.Join(dir, "rt"))
	ln, release, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	d := NewDaemon(newEngine(t), SessionInfo{Name: "sec", PID: os.Getpid()}, nil)
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- d.Serve(sctx, ln) }()
	defer func() { stop(); <-served }()

	asNobody := func() (string, error) {
		cmd := exec.Command(dialer)
		cmd.Env = []string{dialSocketEnv + "=" + s.Socket}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, NoSetGroups: true}}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	// The owner gets in.
	if _, err := (&Client{Socket: s.Socket}).Status(ctx(t)); err != nil {
		t.Fatalf("the owner was refused: %v", err)
	}
	// The modes keep nobody out of the directory.
	out, err := asNobody()
	if err == nil || !strings.Contains(out, "usage\ncannot connect to the session's socket "+s.Socket+": permission denied\nhint: the socket or its directory belongs to another user") {
		t.Errorf("through the 0700 directory: %v\n%s", err, out)
	}
	// Opened up, the session itself refuses, and says why.
	if err := os.Chmod(s.Dir, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(s.Socket, 0o666); err != nil {
		t.Fatal(err)
	}
	out, err = asNobody()
	want := []string{
		"usage\n",
		"refused a connection from uid 65534 (pid ",
		"): this session belongs to uid 0 and serves no other user\n",
		"hint: run mcpctl as the user who started the session (uid 0)\n",
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("as uid 65534 with the modes opened: %v\n%s\nwant it to hold %q", err, out, w)
		}
	}
	if err == nil || strings.HasPrefix(out, "ok") {
		t.Errorf("uid 65534 was let in: %s", out)
	}
	// And the session goes on serving its owner.
	if _, err := (&Client{Socket: s.Socket}).Status(ctx(t)); err != nil {
		t.Errorf("the owner after a refusal: %v", err)
	}
}

// A connection the session refuses is logged and audited: someone tried
// its socket. A TCP connection stands for one from another user here: its
// peer cannot be told, so it is refused the same way.
func TestRefusalLoggedAndAudited(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var logs, audit testutil.Buffer
	d := NewDaemon(newEngine(t), SessionInfo{Name: "sec", PID: os.Getpid()}, slog.New(slog.NewJSONHandler(&logs, nil)))
	d.SetAudit(NewAuditLog(&audit))
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- d.Serve(sctx, &peerListener{Listener: tcp}) }()
	defer func() { stop(); <-served }()

	c := &Client{Socket: "test.sock", Dial: func(ctx context.Context) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "tcp", tcp.Addr().String())
	}}
	if _, err := c.Status(ctx(t)); err == nil || !strings.Contains(err.Error(), "refused a connection: cannot tell which user made it") {
		t.Fatalf("status over a connection the session cannot vouch for: %v", err)
	}
	if !strings.Contains(logs.String(), `"level":"WARN","msg":"refused a connection","error":"refused a connection: cannot tell which user made it`) {
		t.Errorf("the session's log:\n%s", logs.String())
	}
	if !strings.Contains(audit.String(), `"event":"refused","detail":"refused a connection: cannot tell which user made it`) {
		t.Errorf("the audit log:\n%s", audit.String())
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// A secret in a server's log data is redacted, and the data stays JSON
// even when the secret stood for a whole value.
func TestRedactJSON(t *testing.T) {
	redact := func(s string) string { return strings.ReplaceAll(s, "12345678", "<redacted>") }
	for in, want := range map[string]string{
		`{"msg":"key 12345678"}`: `{"msg":"key <redacted>"}`,
		`{"n":12345678}`:         `"{\"n\":<redacted>}"`,
		`"plain"`:                `"plain"`,
	} {
		if got := string(redactJSON(redact, json.RawMessage(in))); got != want {
			t.Errorf("redactJSON(%s) = %s, want %s", in, got, want)
		}
	}
}

// A secret JSON escapes (a quote, a backslash, U+2028 in it) is redacted
// in a log message's data too: it is looked for in the decoded strings.
func TestRedactValueEscapedSecrets(t *testing.T) {
	for _, secret := range []string{`pa\ss1234`, `pa"ss1234`, "pa\u2028ss1234"} {
		redact := func(s string) string { return strings.ReplaceAll(s, secret, "<redacted>") }
		data, _ := marshalVerbatim(redactValue(redact, map[string]any{"msg": "token " + secret, "list": []any{secret}, secret: 1.0}))
		if got := string(redactJSON(redact, data)); strings.Count(got, "<redacted>") != 3 {
			t.Errorf("%q: %s", secret, got)
		}
	}
}
