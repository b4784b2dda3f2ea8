package commands

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/engine"
	"golang.org/x/sys/unix"
)

// sessionLogLevels are the levels parseLogLevel takes, as --help names them.
var sessionLogLevels = []string{"debug", "info", "warn", "error"}

// parseLogLevel reads a --log-level or "logLevel" value; "" is info.
func parseLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "", "info":
		return slog.LevelInfo, nil
	case "debug":
		return slog.LevelDebug, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("unknown log level %q", s)
}

// sessionLogs are the session's logger and audit log, over files in its
// state directory that rotate by size.
type sessionLogs struct {
	logger *slog.Logger
	audit  *engine.AuditLog
	files  []*engine.RotatingFile
	// level is the log's level: --log-level's (fixed), else the config's,
	// which a reload changes.
	level *slog.LevelVar
	fixed bool
	// stop ends watchDir, which closes done.
	stop, done chan struct{}
}

// follow sets the log's level to cfg's logLevel, unless --log-level fixed
// it; a reload calls it with the config it read.
func (l *sessionLogs) follow(cfg *config.Config) error {
	if l.fixed {
		return nil
	}
	lvl, err := parseLogLevel(cfg.LogLevel)
	if err != nil {
		return err
	}
	if lvl != l.level.Level() {
		l.level.Set(lvl)
		l.logger.Info("log level changed", "to", lvl.String())
	}
	return nil
}

func (l *sessionLogs) close() {
	if l.stop != nil {
		close(l.stop)
		<-l.done
	}
	for _, f := range l.files {
		f.Close()
	}
}

// openSessionLogs opens the session's log (session.log) and audit log
// (audit.log), both 0600 and rotated at 10 MiB keeping 3 old files. The
// log is JSON at the level of --log-level, else of the config's logLevel.
// A detached session logs to the file only; one in the foreground also
// to stderr, as text on a terminal.
func openSessionLogs(env *Env, cfg *config.Config, sess *engine.Session, detached bool, flagLevel string) (*sessionLogs, error) {
	lvlName := flagLevel
	if lvlName == "" {
		lvlName = cfg.LogLevel
	}
	level, err := parseLogLevel(lvlName)
	if err != nil {
		return nil, err
	}
	if err := sess.EnsureStateDir(); err != nil {
		return nil, err
	}
	logf, err := engine.OpenRotating(sess.LogFile(), engine.DefaultLogMaxBytes, engine.DefaultLogKeep)
	if err != nil {
		return nil, err
	}
	auditf, err := engine.OpenRotating(sess.AuditFile(), engine.DefaultLogMaxBytes, engine.DefaultLogKeep)
	if err != nil {
		logf.Close()
		return nil, err
	}
	if detached {
		// The session's own stdout and stderr are the log file spawnSession
		// opened (a panic's trace goes there). They follow the log across
		// a rotation instead of filling session.log.1 until it is dropped.
		logf.OnRotate(followWithStdio)
	}
	lv := new(slog.LevelVar)
	lv.Set(level)
	hopts := &slog.HandlerOptions{Level: lv}
	var handler slog.Handler = slog.NewJSONHandler(logf, hopts)
	if !detached {
		var term slog.Handler = slog.NewJSONHandler(env.ErrOut, hopts)
		if env.StderrTTY {
			term = slog.NewTextHandler(env.ErrOut, hopts)
		}
		handler = slog.NewMultiHandler(handler, term)
	}
	l := &sessionLogs{
		logger: slog.New(engine.RequestIDHandler(handler)),
		audit:  engine.NewAuditLog(auditf),
		files:  []*engine.RotatingFile{logf, auditf},
		level:  lv,
		fixed:  flagLevel != "",
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	go l.watchDir(sess)
	return l, nil
}

// logsCheckEvery is how often a session looks whether its state directory
// and logs are still there (as often as it looks at its socket).
const logsCheckEvery = 2 * time.Second

// watchDir makes the state directory again, and reopens the logs in it,
// when it is removed while the session runs (rm -rf ~/.local/state/mcpctl/
// NAME): the session would otherwise write to removed files for the rest
// of its life, and mcpctl logs find none.
func (l *sessionLogs) watchDir(sess *engine.Session) {
	defer close(l.done)
	dir, _ := os.Lstat(sess.StateDir)
	tick := time.NewTicker(logsCheckEvery)
	defer tick.Stop()
	failing := false // said once, until it works
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		var errs []string
		now, err := os.Lstat(sess.StateDir)
		removed := err != nil || dir == nil || !os.SameFile(dir, now)
		if removed {
			// Another user may have made it meanwhile, in a shared
			// MCPCTL_STATE_DIR: it is checked as at the start.
			if err := sess.EnsureStateDir(); err != nil {
				if !failing {
					l.logger.Error("the session's state directory was removed and cannot be made again; its logs go to the removed files until it can", "dir", sess.StateDir, "error", err.Error())
				}
				failing = true
				continue
			}
			dir, _ = os.Lstat(sess.StateDir)
		}
		var reopened []string
		for _, f := range l.files {
			ok, err := f.Recheck()
			if err != nil {
				errs = append(errs, err.Error())
			}
			if ok {
				reopened = append(reopened, filepath.Base(f.Path()))
			}
		}
		if len(errs) > 0 && !failing {
			l.logger.Error("cannot reopen the session's logs", "error", strings.Join(errs, "; "))
		}
		failing = len(errs) > 0
		switch {
		case removed && len(errs) == 0:
			l.logger.Warn("the session's state directory was removed; made it again and reopened the logs in it", "dir", sess.StateDir)
		case len(reopened) > 0:
			l.logger.Warn("a log of the session was removed; reopened it", "files", reopened)
		}
	}
}

// followWithStdio points the process's stdout and stderr at f.
func followWithStdio(f *os.File) {
	unix.Dup2(int(f.Fd()), 1)
	unix.Dup2(int(f.Fd()), 2)
}
