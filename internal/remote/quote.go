package remote

import "strings"

// Quote returns s as one POSIX shell word. A string made only of characters
// no shell treats specially (letters, digits and @%+:,./_-) is returned as
// it is. Anything else is wrapped in single quotes, each single quote inside
// becoming quote, backslash, quote, quote:
//
//	a'b  ->  'a'\''b'
//
// Inside single quotes a POSIX shell interprets nothing, so the word
// reaches the command as exactly these bytes, whatever they are ($, `, \,
// ;, #, newlines, quotes). The empty string becomes a pair of quotes.
//
// "=" is not in the safe set: a bare "a=b" as the first word of a command
// would be an assignment, not a command name.
//
// A NUL byte cannot be part of a command line; Client.Run rejects commands
// that contain one.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	if isSafeWord(s) {
		return s
	}
	return "'" + quoteBody(s) + "'"
}

// quoteBody is s as it appears between the single quotes of Quote.
func quoteBody(s string) string { return strings.ReplaceAll(s, "'", `'\''`) }

func isSafeWord(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("@%+:,./_-", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// Command builds a command line from a program name and its arguments, each
// quoted with Quote: Command("install.sh", "-p", password) runs install.sh
// with password as its second argument, never as shell syntax.
func Command(name string, args ...string) string {
	var b strings.Builder
	b.WriteString(Quote(name))
	for _, a := range args {
		b.WriteByte(' ')
		b.WriteString(Quote(a))
	}
	return b.String()
}
