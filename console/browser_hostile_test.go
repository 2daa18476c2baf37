package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/chromedp/chromedp"
)

// Markup and script in the strings that tenants, operators and node
// daemons set. Each payload calls alert() with where it was put, so that a
// failure names the hole: an alert fails the run (the harness records
// every dialog but the console's confirm()), and so does the policy
// violation a blocked inline handler reports.
const (
	xssSiteName    = `"><svg onload=alert('site name')>`
	xssGPUModel    = `<img src=x onerror=alert('gpu model')>`
	xssIdentity    = `"><img src=x onerror=alert('token identity')>`
	xssWantedModel = `<svg/onload=alert('wanted model')>`
	xssWebhookURL  = `http://127.0.0.1:9/"><img src=x onerror=alert('webhook url')>`
	xssWebhookDesc = `<a href="javascript:alert('webhook description')">click</a>`
	xssPool        = `<img src=x onerror=alert('pool in the form')>`
	xssRoute       = `<img src=x onerror=alert('route')>`
)

// hostileStrings sets every string of the API that the console shows to
// a payload and walks the pages that show them, as an operator and as the
// tenant who set them: each page must show the payload as text, hold no
// element or attribute the payload would have made (tab.inert), and run
// nothing. The console builds its pages with text nodes and attributes set
// one by one (js/dom.js), so this holds without the Content-Security-Policy;
// the policy is the second wall, not the first.
func hostileStrings(t *testing.T, d *demo, b *browser, op, tail *tab) {
	// An operator names a site, and a node's inventory names its GPU model
	// (a daemon reports it the same way when it joins).
	d.call(t, d.operator, http.MethodPost, "/v1/sites", map[string]any{"id": "hostile", "name": xssSiteName}, http.StatusCreated)
	d.call(t, d.operator, http.MethodPost, "/v1/pools", map[string]any{"id": "hostile-pool", "siteId": "hostile", "kind": "bare-metal"}, http.StatusCreated)
	d.call(t, d.operator, http.MethodPost, "/v1/nodes", map[string]any{"id": "hostile-node", "poolId": "hostile-pool",
		"vcpu": 16, "memoryMb": 65536, "diskGb": 100,
		"gpus": []map[string]any{{"uuid": "GPU-hostile-0", "model": xssGPUModel, "memoryMb": 81920}}}, http.StatusCreated)

	// A tenant whose token names it with a payload books that GPU by its
	// model, asks for a model nothing has (the reason it waits quotes it),
	// and registers a webhook endpoint.
	mallory := d.call(t, d.operator, http.MethodPost, "/v1/tokens",
		map[string]string{"tenant": "mallory", "identity": xssIdentity, "role": "member"}, http.StatusCreated)["token"].(string)
	for res, max := range map[string]int{"gpu": 4, "vcpu": 64, "memory": 262144, "disk": 1000} {
		d.call(t, d.operator, http.MethodPut, "/v1/tenants/mallory/quotas/"+res, map[string]int{"max": max}, http.StatusOK)
	}
	booked := reserve(t, d, mallory, map[string]any{"poolId": "hostile-pool", "gpuModel": xssGPUModel})
	waiting := reserve(t, d, mallory, map[string]any{"gpuModel": xssWantedModel})
	d.call(t, mallory, http.MethodPost, "/v1/webhook-endpoints", map[string]any{
		"url": xssWebhookURL, "description": xssWebhookDesc}, http.StatusCreated)

	t.Run("as the operator", func(t *testing.T) {
		op, tail := op.in(t), tail.in(t)
		op.open("#/fleet", `section.site[data-site="hostile"]`)
		op.showsText("the fleet", `section.site[data-site="hostile"] h2`, xssSiteName)
		op.inert("the fleet")

		op.open("#/nodes/hostile-node", `#gpus tr[data-device="GPU-hostile-0"]`)
		op.showsText("the node", `#gpus tr[data-device="GPU-hostile-0"]`, xssGPUModel)
		op.inert("the node")

		op.open("#/timeline?pool=hostile-pool", "#timeline svg.timeline")
		op.waitFor("the booking is drawn", fmt.Sprintf(`!!document.querySelector('#timeline a.bar[data-reservation=%q]')`, booked))
		op.showsText("the timeline's lanes", "#timeline svg text.group-label", xssGPUModel)
		op.inert("the timeline")

		op.open("#/timeline?pool=demo-pool", "#timeline svg.timeline")
		op.showsText("the reason it waits", fmt.Sprintf(`#pending tr[data-reservation=%q]`, waiting), xssWantedModel)
		op.inert("the pending list")

		op.open("#/reservations?tenant=mallory", "#reservation-table")
		op.showsText("the list", fmt.Sprintf(`#reservation-table tr[data-reservation=%q] .request`, booked), xssGPUModel)
		op.inert("the list")

		op.open("#/capacity", `#pool-capacity section[data-pool="hostile-pool"]`)
		op.showsText("the pool's capacity", `#pool-capacity section[data-pool="hostile-pool"]`, xssGPUModel)
		op.inert("capacity")

		op.open("#/webhooks", "section.webhook")
		op.showsText("the endpoint", "section.webhook h3", xssWebhookURL)
		op.showsText("the endpoint", "section.webhook dl", xssWebhookDesc)
		op.inert("the webhooks")

		// What the API says about an address it does not know quotes it.
		op.open("#/nodes/"+url.PathEscape(xssRoute), "h1")
		op.showsText("a node that does not exist", "main h1", xssRoute)
		op.waitFor("the refusal is shown", `!!document.querySelector('main .notice')`)
		op.showsText("the refusal", "main .notice", xssRoute)
		op.inert("a node that does not exist")

		tail.showsText("the event tail", `#event-tail tr[data-type="gpu.registered"]`, xssGPUModel)
		tail.inert("the event tail")
	})

	t.Run("as the tenant who set them", func(t *testing.T) {
		tn := b.tab(t, "hostile tenant")
		tn.signIn(d.url, mallory)
		tn.waitFor("the header names the token", fmt.Sprintf(`document.querySelector('#whoami').title === %q`, "identity "+xssIdentity))
		tn.inert("the header")

		tn.open("#/reservations", "#new-reservation")
		tn.showsText("the list", fmt.Sprintf(`#reservation-table tr[data-reservation=%q]`, waiting), xssWantedModel)
		tn.do("reserve in a pool named with a payload",
			chromedp.Click(chromedp.CSS("#new-reservation summary")),
			chromedp.SetValue(chromedp.CSS("#nr-poolId"), xssPool),
			chromedp.Click(chromedp.CSS("#nr-submit")))
		tn.showsText("the refusal, which quotes the pool", "#new-reservation-result .notice-error", xssPool)
		tn.inert("the reservation form")

		tn.open("#/reservations/"+waiting, "#reservation-state")
		tn.showsText("why it waits", "main table", xssWantedModel)
		tn.inert("the reservation")

		tn.open("#/webhooks", "section.webhook")
		tn.showsText("the endpoint", "section.webhook h3", xssWebhookURL)
		tn.clickWhenShown("show the attempts", "section.webhook .toolbar button")
		tn.waitFor("the attempts are listed", `!!document.querySelector('section.webhook table, section.webhook p.muted')`)
		tn.inert("the webhooks")

		tn.open("#/reservations/"+url.PathEscape(xssRoute), "h1")
		tn.showsText("a reservation that does not exist", "main h1", xssRoute)
		tn.inert("a reservation that does not exist")

		tn.open("#/events", "#event-tail")
		tn.inert("the event tail")
	})
}
