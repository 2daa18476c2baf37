// Command _serverfunctions measures what a PL/pgSQL function per command
// would save against batches of statements sent from Go, on a toy schema
// (schema.sql): see README.md. It is an experiment of issue 25, not part of
// the product; the leading underscore keeps it out of ./... patterns.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// cpuTicks is the machine's busy CPU time so far, in 10 ms ticks.
func cpuTicks() int64 {
	b, _ := os.ReadFile("/proc/stat")
	f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
	var s int64
	for _, i := range []int{1, 2, 3, 6, 7} {
		v, _ := strconv.ParseInt(f[i], 10, 64)
		s += v
	}
	return s
}

func main() {
	mode := flag.String("mode", "client", "client (BEGIN and COMMIT in round trips of their own: 8 per reservation) | client6 (BEGIN and COMMIT in the first and last batch: 6) | func (one call of a PL/pgSQL function per transaction: 2)")
	dur := flag.Duration("d", 8*time.Second, "")
	c := flag.Int("c", 8, "")
	flag.Parse()
	ctx := context.Background()
	cfg, _ := pgxpool.ParseConfig("postgres://postgres@127.0.0.1:5499/postgres")
	cfg.MaxConns = 6
	pool, err := pgxpool.New(ctx, cfg.ConnString())
	if err != nil {
		panic(err)
	}
	pool.Close()
	pool, _ = pgxpool.NewWithConfig(ctx, cfg)
	var n atomic.Int64
	stop := time.Now().Add(*dur)
	var ru0 syscall.Rusage
	syscall.Getrusage(0, &ru0)
	t0 := cpuTicks()
	var wg sync.WaitGroup
	for i := 0; i < *c; i++ {
		wg.Go(func() {
			for time.Now().Before(stop) {
				t := rand.IntN(64) + 1
				nd := rand.IntN(990) + 1
				var err error
				if *mode == "func" {
					err = fn(ctx, pool, t, nd)
				} else if *mode == "client6" {
					err = client6(ctx, pool, t, nd)
				} else {
					err = client(ctx, pool, t, nd)
				}
				if err != nil {
					panic(err)
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	t1 := cpuTicks()
	var ru1 syscall.Rusage
	syscall.Getrusage(0, &ru1)
	goms := float64((ru1.Utime.Nano()+ru1.Stime.Nano())-(ru0.Utime.Nano()+ru0.Stime.Nano())) / 1e6
	r := float64(n.Load())
	fmt.Printf("%s: %.0f res/s, total cpu %.3f ms/res, go %.3f ms/res\n", *mode, r/dur.Seconds(), float64(t1-t0)*10/r, goms/r)
}

// fn is one reservation as two function calls, each its own transaction.
func fn(ctx context.Context, pool *pgxpool.Pool, t, nd int) error {
	var rid int64
	if err := pool.QueryRow(ctx, "SELECT create_f($1, $2)", t, nd).Scan(&rid); err != nil {
		return err
	}
	_, err := pool.Exec(ctx, "SELECT release_f($1, $2, $3)", t, nd, rid)
	return err
}

// The statements of one toy reservation, in the round trips the control
// plane's commands use: a create (reads; charge, lock, bookings; event and
// job) and a release (reads; refund and updates; event and job). Each
// batch function queues one round trip's statements; rid carries the
// reservation's id from the create to the release.

func createReads(b *pgx.Batch, t, nd int) {
	var m int64
	var best int
	b.Queue("SELECT max FROM quota WHERE tenant=$1 AND res='gpu'", t).QueryRow(func(r pgx.Row) error { return r.Scan(&m) })
	b.Queue("SELECT id FROM nodes WHERE id BETWEEN $1 AND $1+9 ORDER BY free DESC, id LIMIT 1", nd).QueryRow(func(r pgx.Row) error { return r.Scan(&best) })
}

func createWrites(b *pgx.Batch, t, nd int, rid *int64) {
	var u int64
	b.Queue("UPDATE quota SET used=used+1 WHERE tenant=$1 AND res='gpu' AND used+1<=max RETURNING used", t).QueryRow(func(r pgx.Row) error { return r.Scan(&u) })
	b.Queue("SELECT 1 FROM nodes WHERE id=$1 FOR UPDATE", nd)
	b.Queue("UPDATE nodes SET free=free-1, version=version+1 WHERE id=$1", nd)
	b.Queue(`INSERT INTO res(tenant,state,version,spec) VALUES ($1,'booked',1,$2) RETURNING id`, t, `{"gpus":1,"model":"H100","start":"2026-12-06T00:00:00Z"}`).QueryRow(func(r pgx.Row) error { return r.Scan(rid) })
	b.Queue("INSERT INTO alloc(res_id,node) VALUES (currval('res_id_seq'), $1)", nd)
}

func createTail(b *pgx.Batch, t, nd int, rid int64) {
	b.Queue("INSERT INTO outbox(data) VALUES (jsonb_build_object('type','reservation.created','id',$1::bigint,'tenant',$2::int))", rid, t)
	b.Queue("INSERT INTO jobs(node,payload) VALUES ($1, jsonb_build_object('assign',$2::bigint))", nd, rid)
}

func releaseReads(b *pgx.Batch, rid int64) {
	var st string
	var node int
	b.Queue("SELECT state FROM res WHERE id=$1", rid).QueryRow(func(r pgx.Row) error { return r.Scan(&st) })
	b.Queue("SELECT node FROM alloc WHERE res_id=$1", rid).QueryRow(func(r pgx.Row) error { return r.Scan(&node) })
}

func releaseWrites(b *pgx.Batch, t, nd int, rid int64) {
	b.Queue("UPDATE quota SET used=used-1 WHERE tenant=$1 AND res='gpu' AND used-1>=0", t)
	b.Queue("UPDATE res SET state='released', version=version+1 WHERE id=$1 AND version=1", rid)
	b.Queue("UPDATE alloc SET released=true WHERE res_id=$1", rid)
	b.Queue("UPDATE nodes SET free=free+1, version=version+1 WHERE id=$1", nd)
}

func releaseTail(b *pgx.Batch, t, nd int, rid int64) {
	b.Queue("INSERT INTO outbox(data) VALUES (jsonb_build_object('type','reservation.released','id',$1::bigint,'tenant',$2::int))", rid, t)
	b.Queue("INSERT INTO jobs(node,payload) VALUES ($1, jsonb_build_object('unassign',$2::bigint))", nd, rid)
}

// sendAll sends each batch function's statements as one round trip.
func sendAll(ctx context.Context, send func(*pgx.Batch) error, batches ...func(*pgx.Batch)) error {
	for _, queue := range batches {
		var b pgx.Batch
		queue(&b)
		if err := send(&b); err != nil {
			return err
		}
	}
	return nil
}

// client is one reservation as the statements of fn sent from Go, with
// BEGIN and COMMIT in round trips of their own (pgx.BeginFunc).
func client(ctx context.Context, pool *pgxpool.Pool, t, nd int) error {
	var rid int64
	for _, txn := range [][]func(*pgx.Batch){
		{func(b *pgx.Batch) { createReads(b, t, nd) }, func(b *pgx.Batch) { createWrites(b, t, nd, &rid) },
			func(b *pgx.Batch) { createTail(b, t, nd, rid) }},
		{func(b *pgx.Batch) { releaseReads(b, rid) }, func(b *pgx.Batch) { releaseWrites(b, t, nd, rid) },
			func(b *pgx.Batch) { releaseTail(b, t, nd, rid) }},
	} {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			return sendAll(ctx, func(b *pgx.Batch) error { return tx.SendBatch(ctx, b).Close() }, txn...)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// client6 is client with BEGIN sent in the first batch and COMMIT in the
// last, as the control plane's commands send them: 3 round trips per
// transaction.
func client6(ctx context.Context, pool *pgxpool.Pool, t, nd int) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	var rid int64
	begin := func(b *pgx.Batch) { b.Queue("BEGIN") }
	commit := func(b *pgx.Batch) { b.Queue("COMMIT") }
	return sendAll(ctx, func(b *pgx.Batch) error { return conn.SendBatch(ctx, b).Close() },
		func(b *pgx.Batch) { begin(b); createReads(b, t, nd) },
		func(b *pgx.Batch) { createWrites(b, t, nd, &rid) },
		func(b *pgx.Batch) { createTail(b, t, nd, rid); commit(b) },
		func(b *pgx.Batch) { begin(b); releaseReads(b, rid) },
		func(b *pgx.Batch) { releaseWrites(b, t, nd, rid) },
		func(b *pgx.Batch) { releaseTail(b, t, nd, rid); commit(b) })
}
