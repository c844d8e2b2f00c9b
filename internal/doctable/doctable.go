// Package doctable reads the parameter tables of docs/drivers.md, so that
// tests can hold the documentation and the drivers to each other.
package doctable

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Section returns the text of a "## title" section of a Markdown file,
// up to the next "## " heading.
func Section(path, title string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := string(b)
	start := strings.Index(s, "\n## "+title+"\n")
	if start < 0 {
		return "", fmt.Errorf("%s: no section %q", path, title)
	}
	rest := s[start+len(title)+5:]
	if end := strings.Index(rest, "\n## "); end >= 0 {
		rest = rest[:end]
	}
	return rest, nil
}

// Subsections splits a section at its "### " headings.
func Subsections(section string) map[string]string {
	out := map[string]string{}
	parts := strings.Split("\n"+section, "\n### ")
	for _, p := range parts[1:] {
		title, body, _ := strings.Cut(p, "\n")
		out[strings.TrimSpace(title)] = body
	}
	return out
}

var codeRE = regexp.MustCompile("`([^`]+)`")

// FirstColumn returns the names written in backticks in the first column
// of the text's tables (header and separator rows skipped).
func FirstColumn(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		for _, m := range codeRE.FindAllStringSubmatch(cells[1], -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// JSONBlocks returns the contents of the text's ```json blocks, in order.
func JSONBlocks(text string) []string {
	var out []string
	for {
		i := strings.Index(text, "```json\n")
		if i < 0 {
			return out
		}
		text = text[i+8:]
		j := strings.Index(text, "\n```")
		if j < 0 {
			return out
		}
		out = append(out, text[:j])
		text = text[j+4:]
	}
}

// Diff returns the accepted names the documentation lacks and the documented
// names that are not accepted.
func Diff(documented, accepted []string) (undocumented, unknown []string) {
	in := func(list []string, s string) bool {
		for _, x := range list {
			if x == s {
				return true
			}
		}
		return false
	}
	for _, k := range accepted {
		if !in(documented, k) {
			undocumented = append(undocumented, k)
		}
	}
	for _, k := range documented {
		if !in(accepted, k) {
			unknown = append(unknown, k)
		}
	}
	return undocumented, unknown
}
