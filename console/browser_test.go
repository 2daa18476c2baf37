package console_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/bettercompute/compute/console"
)

// TestBrowserConsole drives the console in Chromium against `compute serve
// --demo`: an operator and a tenant sign in, each in a tab of its own; the
// tenant reserves and releases from the page while the operator's timeline
// and event tail change without a reload; a second tenant's reservation
// stays invisible to the first. The steps share the server and the tabs,
// so they run in order. With COMPUTE_UI_SCREENSHOTS=1 the screenshots of
// the main pages go to docs/console/.
func TestBrowserConsole(t *testing.T) {
	chromium := chromiumPath(t)
	d := startDemo(t)
	b := newBrowser(t, chromium)
	// Tabs live as long as the whole test; steps bind them with in(t).
	op, tn, tail := b.tab(t, "operator"), b.tab(t, "tenant"), b.tab(t, "operator events")
	op.signIn(d.url, d.operator)
	var booked string // the reservation the tenant makes from the page
	// A step that fails leaves the rest nothing to stand on.
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}

	step("the API listener serves the console under its policy", func(t *testing.T) {
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := noFollow.Get(d.url + "/ui")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/ui/" {
			t.Fatalf("/ui answers %d to %q, want a redirect to /ui/", resp.StatusCode, resp.Header.Get("Location"))
		}
		for path, ctype := range map[string]string{"/ui/": "text/html; charset=utf-8", "/ui/js/main.js": "text/javascript; charset=utf-8"} {
			resp, err := http.Get(d.url + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != ctype ||
				resp.Header.Get("Content-Security-Policy") != console.ContentSecurityPolicy {
				t.Fatalf("%s: %d, %q, policy %q", path, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Security-Policy"))
			}
		}
	})

	step("operator sees the fleet", func(t *testing.T) {
		op := op.in(t)
		op.waitFor("the fleet lists demo-node-1", `!!document.querySelector('tr[data-node="demo-node-1"]')`)
		if got := op.text("#whoami"); !strings.Contains(got, "ops") || !strings.Contains(got, "operator") {
			t.Fatalf("whoami shows %q", got)
		}
		if got := op.text("#fleet-summary"); !strings.HasPrefix(got, "3 nodes in 1 pool at 1 site") {
			t.Fatalf("fleet summary %q", got)
		}
		op.waitFor("the tree is site → pool → node",
			`!!document.querySelector('section.site[data-site="demo-site"] section.pool[data-pool="demo-pool"] tr[data-node="demo-node-3"]')`)
		// The demo runs its nodes' daemons: each node is connected, at the
		// generation it was registered with.
		if got := op.text(`tr[data-node="demo-node-2"]`); !strings.Contains(got, "connected") || !strings.Contains(got, "0 / 0") {
			t.Fatalf("node row shows %q, want its liveness and generations", got)
		}
		op.clickWhenShown("open a node", `tr[data-node="demo-node-2"] a`) // the fleet re-renders on liveness events
		op.waitFor("the node page lists its GPUs", `!!document.querySelector('#gpus tr[data-device="GPU-demo-node-2-0"]')`)
		if got := op.text(`#gpus tr[data-device="GPU-demo-node-2-0"]`); !strings.Contains(got, "A100-80GB") ||
			!strings.Contains(got, "mig") || !strings.Contains(got, "3g.40gb") || !strings.Contains(got, "free") {
			t.Fatalf("GPU row shows %q, want model, mode, atoms and holder", got)
		}
	})

	step("the stream parser handles split frames", func(t *testing.T) {
		op := op.in(t)
		got := eval[string](op, `import('/ui/js/sse.js').then(({SSEParser}) => {
			const out = []; const p = new SSEParser((e) => out.push(e));
			p.push('\ufeffretry: 3000\nid: a\n\n: heartbeat\n\nid: b\r');
			p.push('\nevent: x\ndata: {"k":1}\ndata: 2\n\nda');
			p.push('ta: no end yet');
			return JSON.stringify({out, last: p.lastEventId});
		})`)
		if want := `{"out":[{"type":"x","data":"{\"k\":1}\n2","id":"b"}],"last":"b"}`; got != want {
			t.Fatalf("parsed %s, want %s", got, want)
		}
	})

	step("tenant signs in and sees tenant pages only", func(t *testing.T) {
		tn := tn.in(t)
		tn.signIn(d.url, d.tenant)
		tn.waitFor("the tenant lands on its reservations", `location.hash === '#/reservations' && !!document.querySelector('#new-reservation')`)
		if got := tn.text("#whoami"); !strings.Contains(got, "acme") || !strings.Contains(got, "member") {
			t.Fatalf("whoami shows %q", got)
		}
		if eval[bool](tn, `!!document.querySelector('nav a[data-nav="fleet"]')`) {
			t.Fatal("a tenant's menu offers the fleet")
		}
		tn.open("#/fleet", "h1")
		if got := tn.text("main h1"); got != "Operators only" {
			t.Fatalf("a tenant opening the fleet sees %q", got)
		}
	})

	step("tenant reserves from the page; timeline and tail follow without reload", func(t *testing.T) {
		op, tn, tail := op.in(t), tn.in(t), tail.in(t)
		tail.signIn(d.url, d.operator)
		tail.open("#/events", "#event-tail")
		op.open("#/timeline?pool=demo-pool", "#timeline svg.timeline")
		// A reload or a navigation would drop these marks.
		eval[chromedp.Void](op, `window.noReload = true`)
		eval[chromedp.Void](tail, `window.noReload = true`)

		tn.open("#/reservations", "#new-reservation")
		tn.do("fill the reservation form",
			chromedp.Click(chromedp.CSS("#new-reservation summary")),
			chromedp.SetValue(chromedp.CSS("#nr-poolId"), "demo-pool"),
			chromedp.SetValue(chromedp.CSS("#nr-gpus"), "2"),
			chromedp.SetValue(chromedp.CSS("#nr-gpuModel"), "H100-80GB"),
			chromedp.Click(chromedp.CSS("#nr-submit")))
		tn.waitFor("the page confirms the reservation", `!!document.querySelector('#new-reservation-result').dataset.created`)
		booked = eval[string](tn, `document.querySelector('#new-reservation-result').dataset.created`)
		tn.waitFor("the list shows it", fmt.Sprintf(`['booked', 'active'].includes(document.querySelector('#reservation-table tr[data-reservation=%q]')?.dataset.state)`, booked))
		tn.waitFor("the list shows its priority class, the default", fmt.Sprintf(`document.querySelector('#reservation-table tr[data-reservation=%q] .priority')?.dataset.priorityClass === 'standard'`, booked))
		tn.waitFor("the list shows what it asked for", fmt.Sprintf(`document.querySelector('#reservation-table tr[data-reservation=%q] .request')?.textContent.startsWith('2 × GPU H100-80GB')`, booked))

		op.waitFor("the timeline draws a bar per GPU", fmt.Sprintf(`document.querySelectorAll('#timeline a.bar[data-reservation=%q]').length === 2`, booked))
		tail.waitFor("the tail shows the booking", fmt.Sprintf(`!!document.querySelector('#event-tail tr[data-type="reservation.booked"][data-subject="reservations/%s"]')`, booked))
		if !eval[bool](op, `window.noReload === true`) || !eval[bool](tail, `window.noReload === true`) {
			t.Fatal("a page reloaded to show the change")
		}

		// The filter hides a family without losing it.
		row := fmt.Sprintf(`document.querySelector('#event-tail tr[data-subject="reservations/%s"]')`, booked)
		tail.do("hide reservation events", chromedp.Click(chromedp.CSS(`#event-filters input[value="reservation"]`)))
		tail.waitFor("the filter hides the row", row+`.hidden === true`)
		tail.do("show them again", chromedp.Click(chromedp.CSS(`#event-filters input[value="reservation"]`)))
		tail.waitFor("the row is back", row+`.hidden === false`)
	})

	step("tenant releases from the page", func(t *testing.T) {
		op, tn, tail := op.in(t), tn.in(t), tail.in(t)
		tn.clickWhenShown("open the reservation", fmt.Sprintf(`#reservation-table tr[data-reservation=%q] a`, booked))
		tn.waitFor("its page shows its history", `!!document.querySelector('#history li[data-type="reservation.booked"]') && !!document.querySelector('#release')`)
		tn.waitFor("its page shows what it asked for", `document.querySelector('#reservation-request')?.textContent.startsWith('2 × GPU H100-80GB')`)
		tn.waitFor("its page shows its priority class", `document.querySelector('#reservation-priority .priority')?.dataset.priorityClass === 'standard' && document.querySelector('#reservation-priority').textContent.includes('not preemptible')`)
		tn.do("release it", chromedp.Click(chromedp.CSS("#release")))
		tn.waitFor("it is released", `document.querySelector('#reservation-state')?.dataset.state === 'released'`)
		tn.waitFor("the release arrives in its history", `!!document.querySelector('#history li[data-type="reservation.released"]')`)
		if !b.acceptedDialog(fmt.Sprintf("Release reservation %s?", booked)) {
			t.Fatal("release did not ask for confirmation")
		}
		op.waitFor("the timeline drops the bars", fmt.Sprintf(`document.querySelectorAll('#timeline a.bar[data-reservation=%q]').length === 0`, booked))
		tail.waitFor("the tail shows the release", fmt.Sprintf(`!!document.querySelector('#event-tail tr[data-type="reservation.released"][data-subject="reservations/%s"]')`, booked))
	})

	var theirs, ours string
	step("a tenant cannot see another tenant's reservation", func(t *testing.T) {
		op, tn, tail := op.in(t), tn.in(t), tail.in(t)
		globex := d.call(t, d.operator, http.MethodPost, "/v1/tokens",
			map[string]string{"tenant": "globex", "identity": "ui-test", "role": "member"}, http.StatusCreated)["token"].(string)
		for res, max := range map[string]int{"gpu": 4, "vcpu": 64, "memory": 262144, "disk": 1000} {
			d.call(t, d.operator, http.MethodPut, "/v1/tenants/globex/quotas/"+res, map[string]int{"max": max}, http.StatusOK)
		}
		theirs = reserve(t, d, globex, map[string]any{"migProfile": "1g.10gb"})
		ours = reserve(t, d, d.tenant, map[string]any{"gpuModel": "H100-80GB"})

		// The operator sees both: the assertions below can fail.
		tail.waitFor("the operator's tail shows the other tenant", fmt.Sprintf(`!!document.querySelector('#event-tail tr[data-subject="reservations/%s"]')`, theirs))
		op.open("#/reservations", "#reservation-table")
		op.waitFor("the operator's list shows the other tenant", fmt.Sprintf(`!!document.querySelector('#reservation-table tr[data-reservation=%q]')`, theirs))

		// The stream delivers in commit order: once the tenant's own later
		// event is in its tail, the other tenant's would be too.
		tn.open("#/events", "#event-tail")
		tn.waitFor("the tenant's tail shows its own", fmt.Sprintf(`!!document.querySelector('#event-tail tr[data-subject="reservations/%s"]')`, ours))
		if eval[bool](tn, fmt.Sprintf(`!!document.querySelector('#event-tail tr[data-subject="reservations/%s"]')`, theirs)) {
			t.Fatal("the tenant's event tail shows another tenant's reservation")
		}
		tn.open("#/reservations", "#reservation-table")
		tn.waitFor("the tenant's list shows its own", fmt.Sprintf(`!!document.querySelector('#reservation-table tr[data-reservation=%q]')`, ours))
		if eval[bool](tn, fmt.Sprintf(`!!document.querySelector('#reservation-table tr[data-reservation=%q]')`, theirs)) {
			t.Fatal("the tenant's list shows another tenant's reservation")
		}
		tn.open("#/reservations/"+theirs, "h1")
		tn.waitFor("the page refuses it", `!!document.querySelector('[data-not-found]')`)
		if got := tn.text("main .page"); !strings.Contains(got, "not found") || strings.Contains(got, "globex") {
			t.Fatalf("another tenant's reservation page shows %q", got)
		}
		// A mangled link (not valid percent-encoding) is an id that is not
		// found, not a blank page.
		tn.open("#/reservations/%E0%A4%A", "h1")
		tn.waitFor("a mangled link's page says so", `!!document.querySelector('main .page [data-not-found], main .page .notice')`)
	})

	step("the event tail resumes after an outage, missing nothing", func(t *testing.T) {
		tail := tail.in(t)
		// The server ends every stream after its lifetime; while the
		// browser cannot reach the stream, an event is committed. It must
		// arrive once the console is let back in: the console resumes with
		// Last-Event-ID, so the stream replays what it missed.
		stream := d.url + "/v1/events/stream"
		tail.blockURL(stream, true)
		tail.waitFor("the stream is down", `document.querySelector('#stream-status').dataset.state === 'reconnecting'`)
		missed := reserve(t, d, d.tenant, map[string]any{"gpus": 1, "slotKind": "time-slice"})
		tail.blockURL(stream, false)
		tail.waitFor("the event of the outage arrives", fmt.Sprintf(`!!document.querySelector('#event-tail tr[data-subject="reservations/%s"]')`, missed))
		if dup := eval[int](tail, `(() => { const ids = [...document.querySelectorAll('#event-tail tr')].map((r) => r.dataset.eventId);
			return ids.length - new Set(ids).size; })()`); dup != 0 {
			t.Fatalf("%d events were delivered twice across reconnects", dup)
		}
		tail.waitFor("the status says it resumed", `document.querySelector('#stream-status').dataset.state === 'live' &&
			document.querySelector('#stream-status').innerText.includes('resumed')`)
	})

	step("the main pages, as screenshots", func(t *testing.T) {
		op, tn, tail := op.in(t), tn.in(t), tail.in(t)
		// Something waiting and something failing, so the pages have it to show.
		waiting := reserve(t, d, d.tenant, map[string]any{"gpus": 9, "gpuModel": "H100-80GB"})
		d.call(t, d.tenant, http.MethodPost, "/v1/webhook-endpoints", map[string]any{
			"url": "http://127.0.0.1:9/hooks", "description": "nothing listens here", "eventTypes": []string{"reservation.booked"}}, http.StatusCreated)
		reserve(t, d, d.tenant, map[string]any{"gpuModel": "H100-80GB"})

		d.call(t, d.operator, http.MethodPost, "/v1/nodes/demo-node-3/cordon", nil, http.StatusOK)
		op.open("#/fleet", `tr[data-node="demo-node-3"]`)
		op.waitFor("the fleet shows why demo-node-3 takes no bookings",
			`document.querySelector('tr[data-node="demo-node-3"]').innerText.includes('cordoned')`)
		op.screenshot("fleet")
		op.open("#/nodes/demo-node-1", "#gpus")
		op.waitFor("the node page names the holder", fmt.Sprintf(`document.querySelector('#gpus').innerText.includes(%q)`, ours[4:12]))
		op.screenshot("node")
		op.open("#/timeline?pool=demo-pool", "#timeline svg.timeline")
		op.waitFor("the timeline lists the waiting reservation with why", fmt.Sprintf(
			`document.querySelector('#pending tr[data-reservation=%q]')?.innerText.includes('no node can take')`, waiting))
		op.screenshot("timeline")
		op.do("open a booking from the timeline with the keyboard",
			chromedp.Focus(chromedp.CSS(fmt.Sprintf(`#timeline a.bar[data-reservation=%q]`, ours))), chromedp.KeyEvent(kb.Enter))
		op.waitFor("the booking's page opens", fmt.Sprintf(`location.hash === '#/reservations/%s' && !!document.querySelector('#reservation-state')`, ours))
		op.open("#/reservations", "#reservation-table")
		op.screenshot("reservations")
		op.open("#/capacity", `#pool-capacity section[data-pool="demo-pool"]`)
		op.screenshot("capacity")
		tail.screenshot("events")

		tn.open("#/webhooks", "section.webhook")
		tn.clickWhenShown("show the attempts", "section.webhook .toolbar button")
		tn.waitFor("a failed attempt is listed", `!!document.querySelector('section.webhook tr.failed')`)
		tn.screenshot("webhooks")
		tn.open("#/reservations/"+ours, "#reservation-state")
		tn.waitFor("the history is read", `document.querySelectorAll('#history li').length >= 1`)
		tn.screenshot("reservation")
		tn.open("#/capacity", "#quotas > *")
		tn.screenshot("quotas")
		tn.open("#/timeline", "#timeline svg.timeline")
		tn.screenshot("tenant-timeline")
		tn.open("#/reservations?state=live", "#reservation-table")
		tn.screenshot("tenant-reservations")
		tn.do("narrow the window to a phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
		tn.open("#/reservations/"+waiting, "#reservation-state")
		tn.waitFor("the reason it waits", `document.querySelector('main').innerText.includes('Why it is pending')`)
		if w := eval[int](tn, `document.documentElement.scrollWidth`); w > 390 {
			t.Errorf("at phone width the page is %d px wide", w)
		}
		tn.screenshot("phone")
	})

	step("hostile strings show as text and run nothing", func(t *testing.T) {
		hostileStrings(t, d, b, op, tail)
	})

	step("the token stays in the tab, out of every address, and sign-out forgets it", func(t *testing.T) {
		s := b.tab(t, "sign-out")
		s.signIn(d.url, d.tenant)
		s.open("#/events", "#event-tail")
		s.waitFor("the stream is live", `document.querySelector('#stream-status').dataset.state === 'live'`)
		if !eval[bool](s, fmt.Sprintf(`sessionStorage.getItem('compute.console.token') === %q && localStorage.length === 0 && document.cookie === ''`, d.tenant)) {
			t.Fatal("the token is not in this tab's sessionStorage only")
		}
		s.do("sign out", chromedp.Click(chromedp.CSS("#signout")))
		s.waitFor("the sign-in form is back", `!!document.querySelector('#signin') && !document.querySelector('#whoami')`)
		if eval[bool](s, `sessionStorage.getItem('compute.console.token') !== null`) {
			t.Fatal("sign-out left the token in sessionStorage")
		}
		s.do("reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#token")))
		if eval[bool](s, `!!document.querySelector('#whoami')`) {
			t.Fatal("a reload after sign-out signed in again")
		}
		// Every tab of the run, the event streams included: no token and no
		// stream ticket ever travelled in an address (addresses end up in
		// logs, histories and Referer headers).
		urls := b.requested()
		if len(urls) < 100 {
			t.Fatalf("only %d addresses were recorded", len(urls))
		}
		for _, u := range urls {
			if strings.Contains(u, "bc_") || strings.Contains(u, "ticket=") {
				t.Fatalf("a token travelled in an address: %s", u)
			}
		}
	})

	step("a token revoked while its tab is open signs the tab out, without a reconnect", func(t *testing.T) {
		made := d.call(t, d.operator, http.MethodPost, "/v1/tokens",
			map[string]string{"tenant": "acme", "identity": "ui-revoked", "role": "member"}, http.StatusCreated)
		r := b.tab(t, "revoked")
		r.signIn(d.url, made["token"].(string))
		// A reservation's page: the tab's shared stream and the page's own,
		// of the reservation's subject; neither may reconnect.
		r.open("#/reservations/"+ours, "#reservation-state")
		r.waitFor("both streams are live", `document.querySelector('#stream-status').dataset.state === 'live' && `+
			`[...document.querySelectorAll('p.muted')].some((p) => p.textContent === 'From the log, then live.')`)
		// This tab's streams only: the other tabs' are cut every
		// streamLifetime and reconnect on their own schedule (a
		// reservation page's stream of its subject beside the shared one).
		streams := func() int {
			n := 0
			for _, u := range b.requestedBy("revoked") {
				if strings.Contains(u, "/v1/events/stream") {
					n++
				}
			}
			return n
		}
		before := streams()
		d.call(t, d.operator, http.MethodDelete, "/v1/tokens/"+made["id"].(string), nil, http.StatusOK)
		r.waitFor("the sign-in form is back, saying why",
			`!!document.querySelector('#signin') && document.body.innerText.includes('revoked or has expired')`)
		// The stream's UNAUTHENTICATED frame is final: the tab signs out on
		// it instead of reconnecting only to be refused.
		if after := streams(); after != before {
			t.Fatalf("the tab opened %d more event streams after the revocation", after-before)
		}
	})
}

// reserve makes a reservation in demo-pool through the API, for a day from
// now, and returns its id; spec adds to or overrides the defaults.
func reserve(t *testing.T, d *demo, token string, spec map[string]any) string {
	t.Helper()
	body := map[string]any{"poolId": "demo-pool", "gpus": 1, "vcpu": 4, "memoryMb": 16384, "diskGb": 10,
		"start": time.Now().UTC().Format(time.RFC3339), "end": time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)}
	for k, v := range spec {
		body[k] = v
	}
	key := fmt.Sprintf("ui-test-%d", time.Now().UnixNano())
	return d.call(t, token, http.MethodPost, "/v1/reservations", body, http.StatusCreated, "Idempotency-Key", key)["id"].(string)
}
