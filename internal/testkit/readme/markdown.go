package readme

import (
	"fmt"
	"regexp"
	"strings"
)

// block is one fenced code block.
type block struct {
	line int    // line of the opening fence, 1-based
	info string // the whole info string
	lang string // its first word, lower case
	body []string
}

var (
	fenceOpen    = regexp.MustCompile("^( *)(`{3,}|~{3,})(.*)$")
	fenceLangEnd = regexp.MustCompile(`[\s{},]`)
)

// splitBlocks returns the fenced code blocks of a Markdown document, as CommonMark delimits
// them: a fence is a run of at least three backticks or tildes (a backtick fence's info string
// holds no backtick); it closes at a line of the same character, at least as long, and nothing
// else but spaces. The opening fence's indentation (a block inside a list item) is stripped from
// the body. A fence left open is an error (CommonMark would run it to the end of the document,
// swallowing the rest).
func splitBlocks(name, src string) ([]block, error) {
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	var blocks []block
	for i := 0; i < len(lines); i++ {
		m := fenceOpen.FindStringSubmatch(lines[i])
		if m == nil || (m[2][0] == '`' && strings.Contains(m[3], "`")) {
			continue
		}
		indent, fence, info := len(m[1]), m[2], strings.TrimSpace(m[3])
		b := block{line: i + 1, info: info, lang: language(info)}
		closed := false
		for i++; i < len(lines); i++ {
			if isClosingFence(lines[i], fence) {
				closed = true
				break
			}
			l := lines[i]
			for k := 0; k < indent && strings.HasPrefix(l, " "); k++ {
				l = l[1:]
			}
			b.body = append(b.body, l)
		}
		if !closed {
			return blocks, fmt.Errorf("%s:%d: code fence %s never closed", name, b.line, fence)
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

func isClosingFence(line, open string) bool {
	s := strings.TrimLeft(line, " ")
	n := len(s) - len(strings.TrimLeft(s, open[:1]))
	return n >= len(open) && strings.TrimSpace(s[n:]) == ""
}

// language is the first word of an info string: "yaml" for `yaml title="values.yaml"`,
// `yaml{.numberLines}` and the pandoc form `{.yaml}`.
func language(info string) string {
	info = strings.TrimPrefix(strings.TrimPrefix(info, "{"), ".")
	if i := fenceLangEnd.FindStringIndex(info); i != nil {
		info = info[:i[0]]
	}
	return strings.ToLower(info)
}
