package commands

import "strings"

func joinOr(s []string, none string) string {
	if len(s) == 0 {
		return none
	}
	return strings.Join(s, ", ")
}

// isTemplate tells a resource template (or URI) from server.name.
func isTemplate(ref string) bool { return strings.Contains(ref, "://") || strings.Contains(ref, "{") }

// partialList splits the error of a list method: one that came with a list
// is a partial list's (a server that starts on use could not start to be
// listed; see engine.Engine.Tools), said after the list is printed.
func partialList(listed bool, err error) (unlisted, failed error) {
	if err != nil && listed {
		return err, nil
	}
	return nil, err
}

// printThen is the error of printing a result, else unlisted: a partial
// list is printed, then its error said (exit 3).
func printThen(unlisted, printed error) error {
	if printed != nil {
		return printed
	}
	return unlisted
}
