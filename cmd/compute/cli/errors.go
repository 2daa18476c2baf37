package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/bettercompute/compute/client"
	"github.com/bettercompute/compute/core"
)

// Exit codes by kind of error; docs/cli.md lists them. Scripts switch on
// these, so they never change meaning.
const (
	exitOK            = 0
	exitFailure       = 1 // anything not below: INTERNAL, a local I/O error, a server-side command that failed
	exitUsage         = 2 // bad input: a flag, argument or field (INVALID_ARGUMENT, UNSUPPORTED_MEDIA_TYPE)
	exitAuth          = 3 // not logged in, or the token was refused (UNAUTHENTICATED)
	exitDenied        = 4 // PERMISSION_DENIED, TENANT_SUSPENDED
	exitNotFound      = 5 // NOT_FOUND, METHOD_NOT_ALLOWED (a server without the operation)
	exitConflict      = 6 // CONFLICT, QUOTA_EXCEEDED, IDEMPOTENCY_KEY_REUSED
	exitRetryLater    = 7 // RATE_LIMITED, UNAVAILABLE (after the client's own retries)
	exitUnreachable   = 8 // no answer from the server
	exitCursorExpired = 9 // CURSOR_EXPIRED: the log was pruned past the cursor
)

// usageError is bad input found before asking the server: its message
// names the flag or argument at fault.
type usageError struct {
	err error
	cmd *cobra.Command // for the "see --help" hint; may be nil
}

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef is a usageError with a formatted message; start it with the flag
// or argument at fault ("--start: …").
func usagef(format string, args ...any) error {
	return usageError{err: fmt.Errorf(format, args...)}
}

// Usage marks err as bad input found before a command did anything: it
// exits 2, its message printed as it is. The server commands return it
// for a configuration that does not load.
func Usage(err error) error { return usageError{err: err} }

// notLoggedInError is a client command run without a server or token.
type notLoggedInError struct{ msg string }

func (e notLoggedInError) Error() string { return e.msg }

// exitError ends the process with code after its error was already
// reported (the server-side commands log theirs as JSON).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// ErrReported is the error of a command that failed and said why itself,
// as the server commands do in their JSON log: the process exits 1 and
// nothing more is printed.
var ErrReported error = exitError{code: exitFailure}

// ErrReportedUsage is the error of a command that found bad input and said
// why itself, as a server command's own flag parser does (the error and the
// flags it knows, then the JSON log line): the process exits 2, as for any
// bad input (docs/cli.md), and nothing more is printed.
var ErrReportedUsage error = exitError{code: exitUsage}

// apiCallError is an error of a call to the server, with where it went,
// for the message.
type apiCallError struct {
	err    error
	target target
}

func (e apiCallError) Error() string { return e.err.Error() }
func (e apiCallError) Unwrap() error { return e.err }

// exitCode is the exit code of err.
func exitCode(err error) int {
	var (
		u       usageError
		nl      notLoggedInError
		ee      exitError
		apiErr  *client.APIError
		coreErr *core.Error
	)
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &u):
		return exitUsage
	case errors.As(err, &nl):
		return exitAuth
	case errors.As(err, &apiErr):
		return exitCodeOf(apiErr)
	case errors.As(err, &coreErr): // a command run on the database itself (tokens create --database)
		return exitCodeOf(&client.APIError{Code: client.ErrorCode(coreErr.Code)})
	case unreachable(err):
		return exitUnreachable
	}
	return exitFailure
}

// exitCodeOf maps the API's error codes to exit codes; an answer without
// an envelope goes by its status.
func exitCodeOf(e *client.APIError) int {
	switch e.Code {
	case client.ErrorCodeINVALIDARGUMENT, client.ErrorCodeUNSUPPORTEDMEDIATYPE, client.ErrorCodeTOKENLIFETIMEEXCEEDED:
		return exitUsage
	case client.ErrorCodeUNAUTHENTICATED:
		return exitAuth
	case client.ErrorCodePERMISSIONDENIED, client.ErrorCodeTENANTSUSPENDED:
		// A suspended tenant's token is refused until an operator resumes
		// the tenant: to a script, a refusal of what the token may do, not
		// a token to replace (exit 3) nor a moment to wait out (exit 7).
		return exitDenied
	case client.ErrorCodeNOTFOUND, client.ErrorCodeMETHODNOTALLOWED:
		// A 405 answers an operation this server does not have (one
		// older than the CLI): to a script, as absent as a missing object,
		// and what it exited with before the code had a name of its own.
		return exitNotFound
	case client.ErrorCodeCONFLICT, client.ErrorCodeQUOTAEXCEEDED, client.ErrorCodeIDEMPOTENCYKEYREUSED:
		return exitConflict
	case client.ErrorCodeRATELIMITED, client.ErrorCodeUNAVAILABLE:
		return exitRetryLater
	case client.ErrorCodeCURSOREXPIRED:
		return exitCursorExpired
	}
	switch {
	case e.Status == 502 || e.Status == 503 || e.Status == 504 || e.Status == 429:
		return exitRetryLater
	case e.Status == 401:
		return exitAuth
	case e.Status == 403:
		return exitDenied
	case e.Status == 404 || e.Status == 405:
		return exitNotFound
	}
	return exitFailure
}

// unreachable reports whether err is the server not answering at all.
func unreachable(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	var ue *url.Error
	return errors.As(err, &op) || errors.As(err, &dns) || errors.Is(err, syscall.ECONNREFUSED) ||
		(errors.As(err, &ue) && errors.Is(ue.Err, context.DeadlineExceeded))
}

// report writes err to stderr as "compute: <message>", with what to do
// about it where the kind says, and returns its exit code.
func (c *cli) report(err error) int {
	code := exitCode(err)
	var ee exitError
	if errors.As(err, &ee) {
		return code
	}
	fmt.Fprintf(c.stderr, "compute: %s\n", c.describe(err))
	var u usageError
	if errors.As(err, &u) && u.cmd != nil {
		fmt.Fprintf(c.stderr, "Run '%s --help' for usage.\n", u.cmd.CommandPath())
	}
	return code
}

// describe is the message of err: the API's message and code for an
// answer of the server, and a way forward for the kinds that have one.
func (c *cli) describe(err error) string {
	var (
		call   apiCallError
		apiErr *client.APIError
	)
	hasCall := errors.As(err, &call)
	switch {
	case errors.As(err, &apiErr):
		// The message is the server's (a proxy's page, or echoing what a
		// request held): no escape sequence of it reaches the terminal.
		msg := terminalSafe(apiErr.Message)
		if msg == "" {
			msg = "the server answered " + fmt.Sprint(apiErr.Status)
		}
		kind := terminalSafe(string(apiErr.Code))
		if kind == "" {
			kind = fmt.Sprintf("HTTP %d", apiErr.Status)
		} else if apiErr.Status != 0 {
			kind += fmt.Sprintf(", HTTP %d", apiErr.Status)
		}
		if apiErr.RetryAfter > 0 {
			kind += fmt.Sprintf(", retry after %s", apiErr.RetryAfter)
		}
		out := fmt.Sprintf("%s (%s)", msg, kind)
		if apiErr.Code == client.ErrorCodeUNAUTHENTICATED && hasCall {
			out += "\n" + call.target.reloginHint()
		}
		if apiErr.Code == "" && hasCall && (apiErr.Status == 401 || apiErr.Status == 403 || apiErr.Status == 404) {
			// No envelope: not the API refusing the token or missing the
			// object, but another server (the node gateway's port, which
			// answers 401 to anything but a daemon; a path under the URL).
			out += fmt.Sprintf("\nThat answer is not the compute API's (it has no error code): is %s the API's URL "+
				"(COMPUTE_ADDR, :8080 by default), not the node gateway's (COMPUTE_GATEWAY_ADDR, :8081) or another server's?",
				call.target.server)
		}
		var h hintedError
		if errors.As(err, &h) {
			out += "\n" + h.hint
		}
		if apiErr.Code == client.ErrorCodeINTERNAL && apiErr.RequestID != "" {
			out += fmt.Sprintf("\nrequest id: %s", apiErr.RequestID)
		}
		return out
	case hasCall && unreachable(err) && call.target.login:
		return fmt.Sprintf("cannot reach the server at %s: %v\nIs `compute serve` running there, and is --server its URL? Nothing was saved.",
			call.target.server, call.err)
	case hasCall && unreachable(err):
		return fmt.Sprintf("cannot reach the server at %s (%s): %v\nIs `compute serve` running there? %s",
			call.target.server, call.target.source, call.err, loginHint)
	}
	return err.Error()
}
