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

// shellCommands splits the sh blocks into commands: a line ending in a backslash, or with a
// single quote left open, continues on the next.
func shellCommands(blocks []block) []string {
	var cmds []string
	for _, b := range blocks {
		if b.lang != "sh" {
			continue
		}
		cur := ""
		for _, l := range b.body {
			cur += l
			if strings.HasSuffix(cur, "\\") {
				cur = strings.TrimSuffix(cur, "\\") + " "
				continue
			}
			if strings.Count(cur, "'")%2 == 1 {
				cur += "\n"
				continue
			}
			if strings.TrimSpace(cur) != "" {
				cmds = append(cmds, strings.TrimSpace(cur))
			}
			cur = ""
		}
	}
	return cmds
}

// words splits a shell command into words: quotes group and are removed, a # that starts a word
// ends the command.
func words(cmd string) []string {
	var out []string
	var cur strings.Builder
	inWord, quote := false, rune(0)
	for _, r := range cmd {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		case r == '#' && !inWord:
			return out
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

// VeleroCommands returns the words of every `velero` command in the sh blocks of a Markdown
// document, for a test to hand to the real CLI.
func VeleroCommands(md string) ([][]string, error) {
	cmds, err := Commands(md, "velero")
	out := make([][]string, len(cmds))
	for i, c := range cmds {
		out[i] = words(c)
	}
	return out, err
}

// Commands returns every command of program in the sh blocks of a Markdown document, in order,
// each as a shell reads it (continued lines joined), for a test to run as written.
func Commands(md, program string) ([]string, error) {
	blocks, err := splitBlocks("README.md", md)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range shellCommands(blocks) {
		if ws := words(c); len(ws) > 1 && ws[0] == program {
			out = append(out, c)
		}
	}
	return out, nil
}
