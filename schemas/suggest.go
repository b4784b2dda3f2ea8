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

// levenshtein is the optimal string alignment distance: insertions,
// deletions, substitutions and transpositions of neighbours ("agrs" is one
// edit from "args").
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
