package console_test

import (
	"testing"
)

// TestBrowserPagesFollowABusyStream feeds Live.whenChanged (js/live.js),
// which every live page redraws through, a matching event every 20 ms for
// about a second, as a busy fleet's stream (or one tenant booking back to
// back) delivers them, with a reload slower than the events. The pages
// must go on redrawing while the events keep coming, with the position of
// a recent one, one reload at a time, and once more after the last event
// so that it is not lost.
func TestBrowserPagesFollowABusyStream(t *testing.T) {
	chromium := chromiumPath(t)
	d := startDemo(t)
	b := newBrowser(t, chromium)
	tb := b.tab(t, "operator")
	tb.signIn(d.url, d.operator)
	got := eval[map[string]any](tb, `import('/ui/js/live.js').then(async ({Live}) => {
		const subs = new Set();
		const fake = {subscribe: (fn) => { subs.add(fn); return () => subs.delete(fn); }};
		const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
		const reloads = [];
		let running = 0, overlapped = 0;
		const off = Live.prototype.whenChanged.call(fake, (e) => e.type.startsWith('reservation.'), async (p) => {
			if (running++) overlapped++;
			reloads.push(p);
			await sleep(200);
			running--;
		});
		for (let i = 1; i <= 50; i++) {
			subs.forEach((fn) => fn({type: 'reservation.booked'}, String(i)));
			await sleep(20);
		}
		const during = reloads.length;
		await sleep(800);
		off();
		return {during, overlapped, last: reloads[reloads.length - 1] || ''};
	})`)
	if got["during"].(float64) < 1 {
		t.Errorf("no reload while events kept coming: the page froze until the stream paused (%v)", got)
	}
	if got["overlapped"].(float64) != 0 {
		t.Errorf("reloads overlapped: an older one could finish after a newer one (%v)", got)
	}
	if got["last"] != "50" {
		t.Errorf("the last reload had position %v, want the last event's (50): it would be missing from the page", got["last"])
	}
}
