package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// sseDialer opens GET /v1/events/stream as the bench tenant's member.
type sseDialer struct {
	client *http.Client
	url    string
	token  string
	prog   *progress
	// fromStart opens the streams at the start of the retained log
	// (?after=) instead of the live feed.
	fromStart bool
	// lastEventID, when set, is sent as Last-Event-ID: the streams resume
	// after it, as EventSource does when it reconnects.
	lastEventID string
}

// sseStreams is a set of open streams, each read by a goroutine of its own.
type sseStreams struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	closing atomic.Bool
	ended   atomic.Int64 // streams that ended before close
	once    sync.Once
}

// open opens n streams, sseDialParallel at a time, and returns once every
// one has its 200 response headers: the server subscribes a stream before
// it answers, so each sees every event committed from then on. on gets
// every frame carrying data, with the time its blank line was read, from
// stream i's reader goroutine. On any failure the streams opened so far
// are closed.
func (d sseDialer) open(ctx context.Context, what string, n int, on func(i int, f sseFrame, at time.Time)) (*sseStreams, error) {
	sctx, cancel := context.WithCancel(ctx)
	s := &sseStreams{cancel: cancel}
	next := make(chan int)
	var connected atomic.Int64
	var firstErr error
	var errOnce sync.Once
	fail := func(err error) { errOnce.Do(func() { firstErr = err; cancel() }) }
	var dialers sync.WaitGroup
	for range min(n, sseDialParallel) {
		dialers.Add(1)
		go func() {
			defer dialers.Done()
			for i := range next {
				if err := d.openOne(sctx, s, i, on); err != nil {
					fail(fmt.Errorf("open SSE stream %d of %d: %w", i+1, n, err))
					continue
				}
				if c := connected.Add(1); c%500 == 0 || int(c) == n {
					d.prog.set("SSE %s: %d / %d clients connected", what, c, n)
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-sctx.Done():
			break feed
		}
	}
	close(next)
	dialers.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	if firstErr != nil {
		s.close()
		return nil, firstErr
	}
	return s, nil
}

func (d sseDialer) openOne(ctx context.Context, s *sseStreams, i int, on func(int, sseFrame, time.Time)) error {
	// No ?types= filter: bench.event is no type of the server's catalog,
	// which the filter requires; the frames of any other type are skipped
	// here instead (the bench's tenant has none).
	u := d.url + "/v1/events/stream"
	if d.fromStart {
		u += "?after="
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	if d.lastEventID != "" {
		req.Header.Set("Last-Event-ID", d.lastEventID)
	}
	req.Header.Set("Authorization", "Bearer "+d.token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := d.client.Do(req)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return fmt.Errorf("status %s: %s", resp.Status, body)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer resp.Body.Close()
		_ = readSSE(resp.Body, func(f sseFrame, at time.Time) {
			if f.event == benchEventType {
				on(i, f, at)
			}
		})
		if !s.closing.Load() {
			s.ended.Add(1)
		}
	}()
	return nil
}

// close ends every stream, waits for the readers, and returns how many
// streams had ended before it was called. Idempotent.
func (s *sseStreams) close() int {
	s.once.Do(func() {
		s.closing.Store(true)
		s.cancel()
		s.wg.Wait()
	})
	return int(s.ended.Load())
}

// sseFrame is one Server-Sent Events frame.
type sseFrame struct {
	id, event, data string
}

// readSSE reads frames until r ends, calling on for each frame that has
// data (the first frame, retry and id only, and heartbeat comments have
// none).
func readSSE(r io.Reader, on func(sseFrame, time.Time)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1024), 1<<20)
	var f sseFrame
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if f.data != "" {
				on(f, time.Now())
			}
			f = sseFrame{}
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			f.id = value
		case "event":
			f.event = value
		case "data":
			if f.data != "" {
				f.data += "\n"
			}
			f.data += value
		}
	}
	return sc.Err()
}
