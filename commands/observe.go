package commands

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

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
	if err := os.MkdirAll(sess.StateDir, 0o700); err != nil {
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
	return &sessionLogs{
		logger: slog.New(engine.RequestIDHandler(handler)),
		audit:  engine.NewAuditLog(auditf),
		files:  []*engine.RotatingFile{logf, auditf},
		level:  lv,
		fixed:  flagLevel != "",
	}, nil
}

// followWithStdio points the process's stdout and stderr at f.
func followWithStdio(f *os.File) {
	unix.Dup2(int(f.Fd()), 1)
	unix.Dup2(int(f.Fd()), 2)
}
