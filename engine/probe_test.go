package engine

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A server/discover the server reads and never answers is answered by the
// connection with an error after probeSilence, so that the SDK falls back
// to initialize; the server's late answer is dropped (a 2026-07-28
// server's is told to late), and what comes after it is read. A probe
// answered in time gets no stand-in.
func TestDiscoverProbeUnanswered(t *testing.T) {
	withProbeSilence(t, 100*time.Millisecond)

	for _, answer := range []bool{false, true} {
		gaveUp := make(chan struct{}, 1)
		c, inR, outW, id, ctx := probed(t, func() { gaveUp <- struct{}{} })
		late := 0
		c.probe.late = func() { late++ } // called on Read's goroutine
		server := bufio.NewReader(inR)
		if _, err := server.ReadBytes('\n'); err != nil { // read, as a server does, and not answered
			t.Fatal(err)
		}
		if answer {
			outW.WriteString(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}` + "\n")
		}
		t0 := time.Now()
		msg, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		resp, _ := msg.(*jsonrpc.Response)
		if resp == nil || resp.ID != id || resp.Error == nil {
			t.Fatalf("answered %v: read %#v", answer, msg)
		}
		if !answer {
			if waited := time.Since(t0); waited < probeSilence {
				t.Errorf("stood in after %s, before probeSilence", waited)
			}
			if jerr, _ := resp.Error.(*jsonrpc.Error); jerr == nil || jerr.Message != "mcpctl: no answer to server/discover within 100ms of the server reading it" {
				t.Errorf("stand-in: %v", resp.Error)
			}
			select {
			case <-gaveUp:
			case <-time.After(time.Second):
				t.Error("gaveUp not called")
			}
			// The late answer is nobody's.
			outW.WriteString(`{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"]}}` + "\n")
		} else {
			time.Sleep(2 * probeSilence) // no stand-in comes after the answer
		}
		outW.WriteString(`{"jsonrpc":"2.0","id":2,"result":{}}` + "\n")
		msg, err = c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if resp, _ := msg.(*jsonrpc.Response); resp == nil || resp.ID.Raw() != int64(2) {
			t.Errorf("answered %v: after the probe, read %#v, want the answer to request 2", answer, msg)
		}
		if answer && len(gaveUp) != 0 {
			t.Error("gaveUp called for a probe answered in time")
		}
		// A late answer that is a result is a 2026-07-28 server's.
		if want := map[bool]int{false: 1, true: 0}[answer]; late != want {
			t.Errorf("answered %v: late called %d times, want %d", answer, late, want)
		}
	}
}

// A server still starting has not read the probe: its silence then says
// nothing, and the probe waits (probeBlind, not probeSilence).
func TestDiscoverProbeWaitsForTheRead(t *testing.T) {
	withProbeSilence(t, 50*time.Millisecond)
	c, inR, _, _, ctx := probed(t, nil)
	// Unread for 10 times probeSilence: no stand-in meanwhile.
	short, cancelShort := context.WithTimeout(ctx, 10*probeSilence)
	defer cancelShort()
	if msg, err := c.Read(short); err == nil {
		t.Fatalf("read %#v while the server had not read the probe", msg)
	}
	bufio.NewReader(inR).ReadBytes('\n')
	t0 := time.Now()
	msg, err := c.Read(ctx)
	if resp, _ := msg.(*jsonrpc.Response); err != nil || resp == nil || resp.Error == nil {
		t.Fatalf("read %#v, %v", msg, err)
	}
	if waited := time.Since(t0); waited > 5*time.Second {
		t.Errorf("stood in %s after the read", waited)
	}
}

// probed is a stdio connection over real pipes (the server's stdin inR,
// its stdout outW) that has written a server/discover with id; gaveUp is
// told when the probe is given up on.
func probed(t *testing.T, gaveUp func()) (c *stdioConn, inR, outW *os.File, id jsonrpc.ID, ctx context.Context) {
	outR, outW, _ := os.Pipe()
	inR, inW, _ := os.Pipe()
	c = newStdioConn(newJSONLines(outR, func([]byte, string) {}), inW)
	c.probe.gaveUp = gaveUp
	t.Cleanup(func() { c.Close(); inR.Close(); outW.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	id, _ = jsonrpc.MakeID(float64(1))
	if err := c.Write(ctx, &jsonrpc.Request{ID: id, Method: "server/discover", Params: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	return c, inR, outW, id, ctx
}

// withProbeSilence sets probeSilence for t, on Linux: elsewhere the pipe
// does not tell what is unread, and the probe waits probeBlind.
func withProbeSilence(t *testing.T, d time.Duration) {
	if runtime.GOOS != "linux" {
		t.Skip("the pipe tells what is unread on Linux only; elsewhere the probe waits probeBlind")
	}
	old := probeSilence
	probeSilence = d
	t.Cleanup(func() { probeSilence = old })
}
