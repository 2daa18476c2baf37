package workqueue

import (
	"errors"
	"time"
)

// IsAgain reports whether err is a handler's Again: not a failure, the item
// is simply not done yet (a pending reservation that still does not fit).
func IsAgain(err error) bool {
	_, ok := AgainAfter(err)
	return ok
}

// AgainAfter is the delay a handler's Again asked for, and whether err is
// one.
func AgainAfter(err error) (time.Duration, bool) {
	var a againError
	if !errors.As(err, &a) {
		return 0, false
	}
	return a.after, true
}
