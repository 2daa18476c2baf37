package core

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable reports whether s is valid UTF-8 of printable characters only
// (letters, marks, numbers, punctuation, symbols and the ASCII space). Free
// text that one party writes and another reads (a token's identity, a GPU
// model a daemon reports, a webhook's description and URL) must be: the
// console and the command line show it to operators, and a control
// character (a terminal escape sequence, CR, newline) or an invisible
// format character (a bidirectional override, which reorders what follows
// it) would make it act or read as something else.
func Printable(s string) bool {
	return utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0
}
