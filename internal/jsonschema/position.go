package jsonschema

import (
	"strconv"
	"strings"
)

// Position tells possible tokens in json: AllProp, AllItem, Prop or Item.
type Position interface {
	position()
}

type AllProp struct{}

type AllItem struct{}

type Prop string

type Item int

func (AllProp) position() {}
func (AllItem) position() {}
func (Prop) position()    {}
func (Item) position()    {}

// SchemaPath tells where to look for subschema inside keyword.
type SchemaPath []Position

func schemaPath(path string) SchemaPath {
	var sp SchemaPath
	for _, tok := range strings.Split(path, "/") {
		var pos Position
		switch tok {
		case "*":
			pos = AllProp{}
		case "[]":
			pos = AllItem{}
		default:
			if i, err := strconv.Atoi(tok); err == nil {
				pos = Item(i)
			} else {
				pos = Prop(tok)
			}
		}
		sp = append(sp, pos)
	}
	return sp
}

// collect adds every value at sp in v to out, by its pointer. (mcpctl
// patch: one map filled by a walk, where the original built a map for each
// position of each path, a third of compiling a schema.)
func (sp SchemaPath) collect(v any, ptr jsonPointer, out map[jsonPointer]any) {
	if len(sp) == 0 {
		out[ptr] = v
		return
	}
	rest := sp[1:]
	switch p := sp[0].(type) {
	case AllProp:
		obj, _ := v.(map[string]any)
		for pname, pvalue := range obj {
			rest.collect(pvalue, ptr.append(pname), out)
		}
	case AllItem:
		arr, _ := v.([]any)
		for i, item := range arr {
			rest.collect(item, ptr.append(strconv.Itoa(i)), out)
		}
	case Prop:
		obj, _ := v.(map[string]any)
		if pvalue, ok := obj[string(p)]; ok {
			rest.collect(pvalue, ptr.append(string(p)), out)
		}
	case Item:
		arr, _ := v.([]any)
		if p >= 0 && int(p) < len(arr) {
			rest.collect(arr[p], ptr.append(strconv.Itoa(int(p))), out)
		}
	}
}

func (sp SchemaPath) String() string {
	var sb strings.Builder
	for _, pos := range sp {
		if sb.Len() != 0 {
			sb.WriteByte('/')
		}
		switch pos := pos.(type) {
		case AllProp:
			sb.WriteString("*")
		case AllItem:
			sb.WriteString("[]")
		case Prop:
			sb.WriteString(string(pos))
		case Item:
			sb.WriteString(strconv.Itoa(int(pos)))
		}
	}
	return sb.String()
}
