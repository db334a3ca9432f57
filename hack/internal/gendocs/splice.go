// Package gendocs holds what the generators of Landlord's reference pages (config, metrics,
// reasons) share: putting a generated table between a page's markers.
package gendocs

import (
	"bytes"
	"fmt"
)

// Splice replaces what lies between the lines begin and end of page with table.
func Splice(page, table []byte, begin, end string) ([]byte, error) {
	before, rest, ok := bytes.Cut(page, []byte(begin))
	if !ok {
		return nil, fmt.Errorf("the page has no line %q", begin)
	}
	_, after, ok := bytes.Cut(rest, []byte(end))
	if !ok {
		return nil, fmt.Errorf("the page has no line %q", end)
	}
	var b bytes.Buffer
	b.Write(before)
	b.WriteString(begin + "\n\n")
	b.Write(table)
	b.WriteString("\n" + end)
	b.Write(after)
	return b.Bytes(), nil
}
