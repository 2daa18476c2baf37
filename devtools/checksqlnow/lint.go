package main

import (
	"bytes"
	"fmt"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Finding is one forbidden clock read.
type Finding struct {
	// Path is the file's slash-separated path relative to the root given to
	// Check, so findings read the same on every machine.
	Path string
	// Line is the 1-based line of the match. For a Go raw string that spans
	// several lines it is the line the match is on, not the line the literal
	// starts on, so the report points at the offending text.
	Line int
	// Match is the canonical spelling of what matched ("now()",
	// "CURRENT_TIMESTAMP", ...), whatever case or spacing the source used.
	Match string
	// Text is the whole source line, trimmed of surrounding white space.
	Text string
}

// AllowMarker exempts the line it is on. It exists for the rare line that
// must name a forbidden function without calling it (this tool's own
// pattern table and tests, a comment explaining the rule); a reviewer should
// be able to see every exemption by grepping for it.
const AllowMarker = "check-sql-now: allow"

// clockMigration is the one file allowed to read the real clock: it defines
// compute_now(), which everything else must go through.
const clockMigration = "sql/migrations/0001_clock.sql"

// skipDirs are never walked: VCS metadata, local state, third-party code we
// do not own, and testdata, which holds fixtures that are meant to violate.
var skipDirs = map[string]bool{
	".git":         true,
	".compute":     true,
	"node_modules": true,
	"vendor":       true,
	"testdata":     true,
}

// pattern is one way of reading PostgreSQL's real clock.
type pattern struct {
	// word is the lower-case identifier; matching ignores ASCII case.
	word string
	// call means the word only counts when followed by optional white space
	// and "(": the name alone (a column called now, say) is harmless.
	// Otherwise the word counts on its own, as the SQL keywords need no
	// parentheses.
	call bool
}

// patterns are the forbidden spellings. Each must start and end at an
// identifier boundary, which is what keeps compute_now() legal and
// my_current_timestamp_x from matching.
var patterns = []pattern{
	{word: "now", call: true},
	{word: "transaction_timestamp", call: true},
	{word: "statement_timestamp", call: true},
	{word: "clock_timestamp", call: true},
	{word: "current_timestamp"}, // check-sql-now: allow (the pattern itself)
	{word: "localtimestamp"},    // check-sql-now: allow (the pattern itself)
}

// name is the spelling reported in Finding.Match.
func (p pattern) name() string {
	if p.call {
		return p.word + "()"
	}
	return strings.ToUpper(p.word)
}

// Check walks root and returns every read of the real database clock in
// *.sql files (any line) and in Go string literals (*.go files; comments and
// identifiers are ignored, since only strings can end up as SQL). Tests swap
// compute_now() for a simulated clock, so a query that reads now() directly
// would silently ignore that clock in tests and would let a gateway's or a
// process's clock act as the authority in production; the lint makes that
// impossible to merge.
//
// Findings are in walk order (lexical by path), then by line. An error is
// returned only when the tree cannot be read; Go files that do not scan
// cleanly are still checked as far as the scanner gets, because the compiler
// reports the syntax error anyway.
func Check(root string) ([]Finding, error) {
	var findings []Finding
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDirs[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		ext := strings.ToLower(filepath.Ext(path))
		if ext != ".sql" && ext != ".go" {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == clockMigration {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if ext == ".sql" {
			findings = append(findings, checkSQL(rel, src)...)
		} else {
			findings = append(findings, checkGo(rel, src)...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("checksqlnow: %w", err)
	}
	return findings, nil
}

// checkSQL checks every line of a SQL file, comments included: a comment
// that names a forbidden function is cheap to mark, and treating SQL
// comments specially would need a real SQL lexer.
func checkSQL(path string, src []byte) []Finding {
	var out []Finding
	for i, line := range strings.Split(string(src), "\n") {
		if strings.Contains(line, AllowMarker) {
			continue
		}
		for _, m := range matchLine(line) {
			out = append(out, Finding{Path: path, Line: i + 1, Match: m, Text: strings.TrimSpace(line)})
		}
	}
	return out
}

// checkGo checks the string literals of a Go file. Each literal is mapped
// back onto the raw source lines it covers, so a match inside a multi-line
// raw string gets its own line, and an allow marker anywhere on that source
// line (typically a trailing comment) exempts it.
func checkGo(path string, src []byte) []Finding {
	lines := strings.Split(string(src), "\n")
	fset := token.NewFileSet()
	file := fset.AddFile(path, fset.Base(), len(src))
	var s scanner.Scanner
	// Scan errors are ignored (see Check). Comments are not requested, so
	// the scanner skips them and they never reach the loop below.
	s.Init(file, src, func(token.Position, string) {}, 0)

	var out []Finding
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok != token.STRING {
			continue
		}
		start := file.Offset(pos)
		// Take the literal's extent from the source rather than from lit:
		// the scanner strips carriage returns from raw strings, so lit's
		// offsets would drift from the file's.
		end := start + len(lit)
		if strings.HasPrefix(lit, "`") {
			if i := bytes.IndexByte(src[start+1:], '`'); i >= 0 {
				end = start + 1 + i + 1
			} else {
				end = len(src) // unterminated; the compiler will complain
			}
		}
		line := file.Line(pos)
		for off := start; off < end; line++ {
			// The part of this source line that lies inside the literal.
			lineEnd := end
			if i := bytes.IndexByte(src[off:end], '\n'); i >= 0 {
				lineEnd = off + i
			}
			text := lines[line-1]
			if !strings.Contains(text, AllowMarker) {
				for _, m := range matchLine(string(src[off:lineEnd])) {
					out = append(out, Finding{Path: path, Line: line, Match: m, Text: strings.TrimSpace(text)})
				}
			}
			off = lineEnd + 1
		}
	}
	return out
}

// matchLine returns the canonical names of the patterns found in s, each at
// most once, in order of first appearance. Case folding is ASCII only, which
// keeps byte offsets aligned and is all SQL keywords need.
func matchLine(s string) []string {
	var found []string
	seen := map[string]bool{}
	for i := 0; i < len(s); i++ {
		if i > 0 && isIdent(s[i-1]) {
			continue // not at the start of a word: compute_now, my_current_...
		}
		for _, p := range patterns {
			if !hasPrefixFold(s[i:], p.word) {
				continue
			}
			j := i + len(p.word)
			if p.call {
				for j < len(s) && isSpace(s[j]) {
					j++
				}
				if j >= len(s) || s[j] != '(' {
					continue
				}
			} else if j < len(s) && isIdent(s[j]) {
				continue
			}
			if n := p.name(); !seen[n] {
				seen[n] = true
				found = append(found, n)
			}
		}
	}
	return found
}

func hasPrefixFold(s, lowerPrefix string) bool {
	if len(s) < len(lowerPrefix) {
		return false
	}
	for i := 0; i < len(lowerPrefix); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lowerPrefix[i] {
			return false
		}
	}
	return true
}

// isIdent reports whether c can continue an SQL or Go identifier (ASCII
// only; a non-ASCII neighbour is treated as a boundary, erring towards a
// finding).
func isIdent(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'
}
