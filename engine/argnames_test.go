package engine

import (
	"strings"
	"testing"
)

// TestArgNames: names from the JSON object and from pairs, sorted, once
// each; never a value.
func TestArgNames(t *testing.T) {
	got := argNames(&CallRequest{Arguments: []byte(`{"token":"s3cret","b":1}`), Pairs: []string{"a=x=y", "n:=5", "token=again", "novalue"}})
	if strings.Join(got, ",") != "a,b,n,token" {
		t.Errorf("argNames = %v", got)
	}
}
