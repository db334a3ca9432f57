// Package docs reads Landlord's Markdown documentation the way GitHub renders it: the links a
// page holds, the anchors its headings make and the Mermaid diagrams it draws. The tests beside
// it hold README.md and docs/ to what a reader clicks on.
package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// Page is one Markdown file, split into what GitHub treats as prose and as fenced code.
type Page struct {
	Path     string // relative to the repository root, with forward slashes
	Headings []Heading
	Links    []Link
	Mermaid  []Block
	Prose    []Line // lines outside fenced code, inline code removed
}

// Heading is a Markdown ATX heading and the anchor GitHub gives it.
type Heading struct {
	Line   int
	Text   string
	Anchor string
}

// Link is an inline link `[text](target)` found outside code.
type Link struct {
	Line   int
	Target string
}

// Block is a fenced code block's body.
type Block struct {
	Line  int // the line of the opening fence
	Lines []string
}

// Line is one line of prose.
type Line struct {
	Number int
	Text   string
}

var (
	headingRE    = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	fenceRE      = regexp.MustCompile("^\\s*(```+|~~~+)\\s*([\\w-]*)")
	inlineCodeRE = regexp.MustCompile("`+[^`]*`+")
	linkRE       = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	htmlAnchorRE = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
)

// Read parses the Markdown file at root/path.
func Read(root, path string) (*Page, error) {
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path)))
	if err != nil {
		return nil, err
	}
	return Parse(path, string(data)), nil
}

// Parse splits a Markdown document into headings, links, Mermaid blocks and prose.
func Parse(path, text string) *Page {
	p := &Page{Path: path}
	seen := map[string]int{}
	var fence string
	var block *Block
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			if fence == "" {
				fence = m[1]
				if m[2] == "mermaid" {
					block = &Block{Line: n}
				}
				continue
			}
			if strings.HasPrefix(strings.TrimSpace(line), fence) && strings.TrimSpace(line) == strings.Repeat(fence[:1], len(strings.TrimSpace(line))) {
				fence = ""
				if block != nil {
					p.Mermaid = append(p.Mermaid, *block)
					block = nil
				}
				continue
			}
		}
		if fence != "" {
			if block != nil {
				block.Lines = append(block.Lines, line)
			}
			continue
		}
		for _, m := range htmlAnchorRE.FindAllStringSubmatch(line, -1) {
			p.Headings = append(p.Headings, Heading{Line: n, Text: m[1], Anchor: m[1]})
		}
		prose := inlineCodeRE.ReplaceAllString(line, "")
		p.Prose = append(p.Prose, Line{Number: n, Text: prose})
		if m := headingRE.FindStringSubmatch(line); m != nil {
			anchor := Slug(m[2])
			if k := seen[anchor]; k > 0 {
				seen[anchor] = k + 1
				anchor = fmt.Sprintf("%s-%d", anchor, k)
			} else {
				seen[anchor] = 1
			}
			p.Headings = append(p.Headings, Heading{Line: n, Text: m[2], Anchor: anchor})
		}
		for _, m := range linkRE.FindAllStringSubmatch(prose, -1) {
			p.Links = append(p.Links, Link{Line: n, Target: m[1]})
		}
	}
	return p
}

var mdLinkTextRE = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// Slug is the anchor GitHub makes of a heading's text: the text as rendered (links become their
// text, emphasis and code marks go), lowercased, every character that is not a letter, a digit,
// a space, '-' or '_' removed, and each space turned into '-'. Duplicates are numbered by Parse.
func Slug(heading string) string {
	s := mdLinkTextRE.ReplaceAllString(heading, "$1")
	s = strings.ToLower(s)
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// HasAnchor says whether the page has a heading (or HTML anchor) making anchor.
func (p *Page) HasAnchor(anchor string) bool {
	for _, h := range p.Headings {
		if h.Anchor == anchor {
			return true
		}
	}
	return false
}
