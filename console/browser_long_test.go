package console_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// overflowCheck lists the elements of the page that reach past the right
// edge of the viewport or of the box they sit in, outside the containers
// that scroll on purpose (tables and the timeline scroll sideways in their
// own frame): the page itself must never need a sideways scroll to show a
// button or a fact, and no fact may be drawn over its neighbour.
const overflowCheck = `(() => {
	const bad = [];
	const vw = document.documentElement.clientWidth;
	if (document.documentElement.scrollWidth > vw + 1)
		bad.push('the page is ' + document.documentElement.scrollWidth + ' px wide in a ' + vw + ' px window');
	for (const el of document.querySelectorAll('#app *')) {
		if (el.closest('.table-wrap, .chart-wrap')) continue;
		const r = el.getBoundingClientRect();
		if (r.width === 0) continue;
		const box = el.parentElement.closest('dd, .card, section, main, header');
		const edge = box ? Math.min(box.getBoundingClientRect().right, vw) : vw;
		if (r.right > edge + 1) bad.push(el.localName + (el.className ? '.' + String(el.className).split(' ')[0] : '') +
			' ends at ' + Math.round(r.right) + ' px, past ' + Math.round(edge) + ' px');
		if (bad.length > 8) break;
	}
	return bad.join('; ');
})()`

// fits fails the test when a page needs a sideways scroll or draws a
// string over its neighbours.
func (tb *tab) fits(where string) {
	tb.t.Helper()
	if bad := eval[string](tb, overflowCheck); bad != "" {
		tb.t.Errorf("%s: %s: a long string breaks the layout: %s", tb.name, where, bad)
	}
}

// TestBrowserLongStrings sets the strings a tenant controls to the longest
// the API accepts, with no space to break them at, and opens the pages
// that show them, as the operator and as the tenant, at desktop and phone
// widths: every page must still fit its window, each string wrapping in its
// own box.
func TestBrowserLongStrings(t *testing.T) {
	chromium := chromiumPath(t)
	d := startDemo(t)
	b := newBrowser(t, chromium)

	longURL := "http://127.0.0.1:9/" + strings.Repeat("u", 2048-len("http://127.0.0.1:9/"))
	longDesc := strings.Repeat("d", 1024)
	longModel := strings.Repeat("M", 128)
	waiting := reserve(t, d, d.tenant, map[string]any{"gpuModel": longModel})
	d.call(t, d.tenant, http.MethodPost, "/v1/webhook-endpoints", map[string]any{"url": longURL, "description": longDesc}, http.StatusCreated)

	for _, who := range []struct{ name, token string }{{"operator", d.operator}, {"tenant", d.tenant}} {
		for _, w := range []int64{1280, 375} {
			t.Run(fmt.Sprintf("%s at %d px", who.name, w), func(t *testing.T) {
				tb := b.tab(t, fmt.Sprintf("%s %d", who.name, w))
				tb.do("resize", chromedp.EmulateViewport(w, 800))
				tb.signIn(d.url, who.token)
				tb.open("#/webhooks", "section.webhook")
				tb.showsText("the endpoint", "section.webhook h3", longURL)
				tb.fits("the webhooks")
				tb.open("#/reservations/"+waiting, "#reservation-request")
				tb.showsText("the request", "#reservation-request", longModel)
				tb.fits("the reservation")
				tb.open("#/reservations", "#reservation-table")
				tb.fits("the reservations")
				tb.open("#/timeline", "#pending")
				tb.fits("the timeline")
			})
		}
	}

	// A tenant's name is at most 63 characters; the header shows it.
	longTenant := d.call(t, d.operator, http.MethodPost, "/v1/tokens", map[string]string{
		"tenant": strings.Repeat("t", 63), "identity": strings.Repeat("i", 256), "role": "member"}, http.StatusCreated)["token"].(string)
	t.Run("a tenant with a long name at 375 px", func(t *testing.T) {
		tb := b.tab(t, "long tenant 375")
		tb.do("resize", chromedp.EmulateViewport(375, 800))
		tb.signIn(d.url, longTenant)
		tb.open("#/reservations", "#reservations p")
		tb.fits("the header and the reservations")
	})
}
