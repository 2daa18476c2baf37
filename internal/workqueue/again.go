package workqueue

import "errors"

// IsAgain reports whether err is a handler's Again: not a failure, the item
// is simply not done yet (a pending reservation that still does not fit).
func IsAgain(err error) bool {
	var a againError
	return errors.As(err, &a)
}
