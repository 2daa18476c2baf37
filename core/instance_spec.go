package core

import (
	"regexp"
	"unicode/utf8"
)

// MaxScript is the longest script a workload may run, in bytes: an
// instance's command or an exec command's script. The daemon hands it to
// sh -c as one argument, and Linux refuses a single argument longer than
// 128 KiB (MAX_ARG_STRLEN) when the workload starts: a longer one would be
// accepted here and fail on the node, with no word to the tenant of why.
// Half of that leaves room for the environment.
const MaxScript = 64 << 10

// ValidateScript checks a script a tenant sent as field: UTF-8 of at most
// MaxScript bytes.
func ValidateScript(field, script string) error {
	if len(script) > MaxScript {
		return Errorf(CodeInvalidArgument, "%s is %d bytes; at most %d are allowed", field, len(script), MaxScript)
	}
	if !utf8.ValidString(script) {
		return Errorf(CodeInvalidArgument, "%s must be UTF-8", field)
	}
	return nil
}

// maxImageRef bounds an image reference (a registry host, a path, a tag
// and a digest fit easily).
const maxImageRef = 512

// imageRef is the grammar of an OCI image reference (the distribution
// project's: [host[:port]/]path[:tag][@digest]), without IPv6 hosts. Every
// path component starts and ends with a letter or digit, so "../etc" or
// "/abs" is no reference.
var imageRef = func() *regexp.Regexp {
	const (
		domainComponent = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
		domain          = domainComponent + `(?:\.` + domainComponent + `)*(?::[0-9]+)?`
		pathComponent   = `[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*`
		name            = `(?:` + domain + `/)?` + pathComponent + `(?:/` + pathComponent + `)*`
		tag             = `[\w][\w.-]{0,127}`
		digest          = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}`
	)
	return regexp.MustCompile(`^` + name + `(?::` + tag + `)?(?:@` + digest + `)?$`)
}()

// Validate checks a spec as a tenant sent it: the command UTF-8 of at most
// MaxScript bytes, the image empty or an image reference.
func (s InstanceSpec) Validate() error {
	if err := ValidateScript("command", s.Command); err != nil {
		return err
	}
	if s.Image != "" && (len(s.Image) > maxImageRef || !imageRef.MatchString(s.Image)) {
		return Errorf(CodeInvalidArgument, "image %q is not an image reference such as registry.example.com/team/train:1.4",
			Clip(s.Image, 200))
	}
	return nil
}
