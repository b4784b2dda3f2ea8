package schemas

import (
	"sort"
	"strings"
)

// Closest returns the candidates that look like a misspelling of name,
// nearest first: case-insensitive equal, edit distance within a third of the
// name's length (at least 1, at most 3), or one a prefix of the other.
// It is the one did-you-mean used across mcpctl.
func Closest(name string, candidates []string) []string {
	type scored struct {
		s string
		d int
	}
	lname := strings.ToLower(name)
	limit := len(name) / 3
	if limit < 1 {
		limit = 1
	}
	if limit > 3 {
		limit = 3
	}
	var hits []scored
	for _, c := range candidates {
		if c == name {
			continue
		}
		lc := strings.ToLower(c)
		d := levenshtein(lname, lc)
		switch {
		case lc == lname:
			hits = append(hits, scored{c, 0})
		case d <= limit && d < len([]rune(name)):
			// (a one-letter name at distance 1 shares nothing with it)
			hits = append(hits, scored{c, d})
		case len(lname) >= 3 && (strings.HasPrefix(lc, lname) || strings.HasPrefix(lname, lc)):
			hits = append(hits, scored{c, limit + 1})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].d != hits[j].d {
			return hits[i].d < hits[j].d
		}
		return hits[i].s < hits[j].s
	})
	if len(hits) > 3 {
		hits = hits[:3]
	}
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.s
	}
	return out
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
