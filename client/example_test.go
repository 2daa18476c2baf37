package client_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log"
	"net/http"
	"strconv"
	"time"

	"github.com/bettercompute/compute/client"
)

// A tenant books two GPUs for an hour, then reads its own write: the list
// waits until the read model shows the reservation (minPosition). The
// Idempotency-Key makes the create safe to retry, which the client does on
// 429 and 503.
func ExampleNew() {
	ctx := context.Background()
	api, err := client.New("http://localhost:8080", "bc_…", client.Options{UserAgent: "example/1"})
	if err != nil {
		log.Fatal(err)
	}
	pool, gpus, key := "demo-pool", 2, "book-2-gpus-2030-01-01"
	start := time.Now().Add(time.Minute).Truncate(time.Second)
	created, err := api.CreateReservationWithResponse(ctx,
		&client.CreateReservationParams{IdempotencyKey: &key},
		client.CreateReservationRequest{PoolID: &pool, Gpus: &gpus, Start: start, End: start.Add(time.Hour)})
	switch {
	case client.IsCode(err, client.ErrorCodeQUOTAEXCEEDED):
		log.Fatal("over quota: release something first")
	case err != nil:
		log.Fatal(err) // an *APIError carrying the server's code and message
	}
	rsv := created.JSON201
	fmt.Println(rsv.ID, rsv.State)

	page, err := api.ListReservationsWithResponse(ctx, &client.ListReservationsParams{MinPosition: &rsv.Position})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range page.JSON200.Items {
		fmt.Println(r.ID, r.State)
	}
}

// Subscribe follows the event stream from the oldest retained event,
// reconnecting and resuming after the last event handled, until the
// context ends. Keep the cursor OnResume was told last to continue from
// there next time (with the same Types): the stream's heartbeats move it
// past the events the filter leaves out, so it stays valid under
// retention however rarely a reservation is booked, where the last
// Event.Cursor expires with its event.
func ExampleAPI_Subscribe() {
	api, err := client.New("http://localhost:8080", "bc_…", client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	oldest, resume := "", ""
	err = api.Subscribe(ctx, client.SubscribeOptions{After: &oldest, Types: []string{"reservation.booked"},
		OnResume: func(cursor string) { resume = cursor }},
		func(ev client.Event) error {
			fmt.Println(ev.Type, ev.Subject, ev.Cursor)
			return nil
		})
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		log.Fatal(err)
	}
	fmt.Println("next time: After:", resume)
}

// A webhook receiver verifies the raw body before trusting it, then
// deduplicates by webhook-id. Here the request is signed the way the
// control plane signs it, so the example runs.
func ExampleVerifyWebhook() {
	// The endpoint's secret, shown once by POST /v1/webhook-endpoints.
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"id":"0b6f7c1e","type":"reservation.booked","data":{"id":"rsv_1"}}`)
	header := signedLikeTheServer(secret, "0b6f7c1e", time.Now(), body)

	if err := client.VerifyWebhook(secret, header, body); err != nil {
		fmt.Println("reject:", err)
		return
	}
	fmt.Println("accept", header.Get(client.WebhookHeaderID))

	// A body changed on the way matches no signature.
	err := client.VerifyWebhook(secret, header, []byte(`{"id":"0b6f7c1e","type":"reservation.released"}`))
	fmt.Println(errors.Is(err, client.ErrWebhookNoMatch), err)
	// Output:
	// accept 0b6f7c1e
	// true webhook: no signature matches
}

// signedLikeTheServer sets the Standard Webhooks headers as the control
// plane does: v1, the base64 HMAC-SHA256 of "id.timestamp.body" under the
// secret's key.
func signedLikeTheServer(secret, id string, at time.Time, body []byte) http.Header {
	key, err := base64.StdEncoding.DecodeString(secret[len("whsec_"):])
	if err != nil {
		panic(err)
	}
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s.%d.%s", id, at.Unix(), body)
	h := http.Header{}
	h.Set(client.WebhookHeaderID, id)
	h.Set(client.WebhookHeaderTimestamp, strconv.FormatInt(at.Unix(), 10))
	h.Set(client.WebhookHeaderSignature, "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
	return h
}
