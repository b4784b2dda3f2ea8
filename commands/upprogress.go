package commands

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-runewidth"
	"github.com/mcpctl/mcpctl/engine"
	"github.com/mcpctl/mcpctl/output"
	"golang.org/x/term"
)

// upProgress is one server's start, as the session reports it to the `up`
// that started it.
type upProgress struct {
	Server string       `json:"server"`
	State  engine.State `json:"state"`
	Error  string       `json:"error,omitempty"`
}

// A startBoard shows the servers' starts live on a terminal: a spinner and
// the time so far, then ready or failed with its time. It redraws its
// lines in place.
type startBoard struct {
	mu    sync.Mutex
	w     io.Writer
	color bool
	width int // the terminal's, in cells; 0 when unknown
	// tall: a line per server would not fit the terminal's height, and
	// the cursor cannot move up past its top row to redraw them: one
	// line counts them instead.
	tall    bool
	names   []string
	rows    map[string]*startRow
	drawn   int // lines drawn last time
	frame   int
	stop    chan struct{}
	stopped chan struct{}
}

type startRow struct {
	state engine.State
	err   string
	since time.Time
	took  time.Duration
}

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// newStartBoard shows the servers among names (in that order) whose start
// the session reports.
func newStartBoard(w io.Writer, color bool, width, height int, names []string) *startBoard {
	b := &startBoard{w: w, color: color, width: width, tall: height > 0 && len(names) >= height,
		names: names, rows: map[string]*startRow{}, stop: make(chan struct{}), stopped: make(chan struct{})}
	go b.tick()
	return b
}

func (b *startBoard) tick() {
	defer close(b.stopped)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			b.mu.Lock()
			b.frame++
			b.draw()
			b.mu.Unlock()
		}
	}
}

// update records a server's new state.
func (b *startBoard) update(p upProgress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.rows[p.Server]
	if r == nil {
		r = &startRow{state: engine.StateStarting, since: time.Now()}
		b.rows[p.Server] = r
	}
	switch p.State {
	case engine.StateStarting:
		r.state, r.since = p.State, time.Now()
	case engine.StateReady, engine.StateUnavailable, engine.StateDegraded:
		if r.state == engine.StateStarting {
			r.took = time.Since(r.since)
		}
		r.state, r.err = p.State, p.Error
	}
	b.draw()
}

// settle takes each ready server's start time from the session's status,
// so that the last frame says what the table after it says.
func (b *startBoard) settle(st *engine.Status) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range st.Servers {
		if r := b.rows[s.Name]; r != nil && (s.State == engine.StateReady || s.State == engine.StateDegraded) && s.StartupSeconds > 0 {
			r.took = time.Duration(s.StartupSeconds * float64(time.Second))
		}
	}
}

// done draws the last frame and stops.
func (b *startBoard) done() {
	close(b.stop)
	<-b.stopped
	b.mu.Lock()
	defer b.mu.Unlock()
	b.draw()
}

func (b *startBoard) draw() {
	if b.tall {
		b.drawCount()
		return
	}
	var sb strings.Builder
	if b.drawn > 0 {
		fmt.Fprintf(&sb, "\033[%dA", b.drawn)
	}
	width, drawn := 0, 0
	for n := range b.rows {
		width = max(width, len(n))
	}
	for _, n := range b.names {
		r := b.rows[n]
		if r == nil {
			continue
		}
		drawn++
		var mark, text string
		switch r.state {
		case engine.StateStarting:
			mark = spinner[b.frame%len(spinner)]
			text = fmt.Sprintf("%-*s  starting  %.1fs", width, n, time.Since(r.since).Seconds())
		case engine.StateReady, engine.StateDegraded:
			mark = b.paint("✓", "32")
			text = fmt.Sprintf("%-*s  %s  %.2fs", width, n, r.state, r.took.Seconds())
		default:
			mark = b.paint("✗", "31")
			text = fmt.Sprintf("%-*s  %s  %.2fs", width, n, "failed", r.took.Seconds())
			if r.err != "" {
				text += ": " + output.Printable(oneLineText(r.err))
			}
		}
		// A line that wrapped would take two rows, and the cursor moved up
		// one per line would land in the wrong place.
		sb.WriteString("\r\033[K" + mark + " " + fitWidth(text, b.width-2) + "\n")
	}
	b.drawn = drawn
	io.WriteString(b.w, sb.String())
}

// drawCount redraws the one line of a tall board: how many servers are
// ready, failed and starting.
func (b *startBoard) drawCount() {
	if len(b.rows) == 0 {
		return
	}
	var ready, failed, starting int
	var since time.Time
	for _, r := range b.rows {
		switch r.state {
		case engine.StateStarting:
			starting++
			if since.IsZero() || r.since.Before(since) {
				since = r.since
			}
		case engine.StateReady, engine.StateDegraded:
			ready++
		default:
			failed++
		}
	}
	mark := b.paint("✓", "32")
	switch {
	case starting > 0:
		mark = spinner[b.frame%len(spinner)]
	case failed > 0:
		mark = b.paint("✗", "31")
	}
	text := fmt.Sprintf("servers: %d ready", ready)
	if failed > 0 {
		text += fmt.Sprintf(", %d failed", failed)
	}
	if starting > 0 {
		text += fmt.Sprintf(", %d starting  %.1fs", starting, time.Since(since).Seconds())
	}
	end := "\r"
	select {
	case <-b.stop:
		end = "\n" // the last frame: the table follows
	default:
	}
	io.WriteString(b.w, "\r\033[K"+mark+" "+fitWidth(text, b.width-2)+end)
}

// paint colours s with an SGR code, unless colours are off.
func (b *startBoard) paint(s, code string) string {
	if !b.color {
		return s
	}
	return "\033[" + code + "m" + s + "\033[0m"
}

// liveOK says whether stderr may carry a live display (a spinner, a line
// redrawn in place): a terminal that moves its cursor (not TERM=dumb), and
// no --quiet.
func (env *Env) liveOK() bool {
	return env.StderrTTY && !env.quiet && env.getenv("TERM") != "dumb"
}

// stderrWidth is the width of the terminal on stderr in cells.
func (env *Env) stderrWidth() int {
	w, _ := terminalSize(env.ErrOut, env.getenv)
	return w
}

// stderrHeight is the height of the terminal on stderr in rows.
func (env *Env) stderrHeight() int {
	_, h := terminalSize(env.ErrOut, env.getenv)
	return h
}

// terminalWidth is the width in cells of the terminal w writes to, or 0
// when unknown.
func terminalWidth(w io.Writer, getenv func(string) string) int {
	width, _ := terminalSize(w, getenv)
	return width
}

// terminalSize is the width in cells and height in rows of the terminal
// w writes to ($COLUMNS and $LINES when it cannot be asked), each 0 when
// unknown.
func terminalSize(w io.Writer, getenv func(string) string) (width, height int) {
	if f, ok := w.(*os.File); ok {
		if cols, rows, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return cols, rows
		}
	}
	width, _ = strconv.Atoi(getenv("COLUMNS"))
	height, _ = strconv.Atoi(getenv("LINES"))
	return max(width, 0), max(height, 0)
}

// fitWidth cuts s to fit in width cells, less one (a line that ends in
// the last column wraps on some terminals), with an ellipsis; width 0 is
// unknown, and s is left whole.
func fitWidth(s string, width int) string {
	if width <= 0 {
		return s
	}
	return runewidth.Truncate(s, max(width-1, 1), "…")
}

// oneLineText is s with its line breaks as spaces: a live line is one row.
func oneLineText(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// colorOK says whether stderr may carry colours: a terminal, and neither
// NO_COLOR (https://no-color.org) nor TERM=dumb.
func (env *Env) colorOK() bool {
	if env.getenv("NO_COLOR") != "" {
		return false
	}
	return env.StderrTTY && env.getenv("TERM") != "dumb"
}
