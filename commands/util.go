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
