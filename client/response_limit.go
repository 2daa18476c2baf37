package client

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
)

// DefaultMaxResponseBody bounds the body of one answer the client reads
// (Options.MaxResponseBody): the largest page the API writes is a few
// megabytes (500 events of at most 64 KiB of data each is the worst), so
// a body beyond it is a misbehaving or hostile server, whose answer would
// otherwise be read whole into memory by the generated code.
const DefaultMaxResponseBody = 256 << 20

// ErrResponseTooLarge is returned (wrapped) by a read past the limit.
var ErrResponseTooLarge = errors.New("client: response body too large")

// limitBody bounds resp's body to max bytes, unless it is an event stream,
// which is read event by event and may last an hour.
func limitBody(resp *http.Response, max int64) {
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		return
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, left: max, max: max}
}

// limitedBody is a response body that fails once more than max bytes have
// been read from it.
type limitedBody struct {
	io.ReadCloser
	left, max int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, fmt.Errorf("%w: over %d bytes", ErrResponseTooLarge, b.max)
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte more than allowed tells a body at the limit from one over it
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, fmt.Errorf("%w: over %d bytes", ErrResponseTooLarge, b.max)
	}
	return n, err
}
