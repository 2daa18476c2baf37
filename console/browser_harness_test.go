package console_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The browser tests start a real `compute serve --demo` and drive a real
// Chromium against it. They run only with COMPUTE_UI_TEST=1 (make test-ui),
// so `make test` needs no browser; with it set, a missing Chromium fails
// them rather than skipping, so CI cannot pass without running them.

// stepTimeout bounds one step: a page to show something, a poll.
const stepTimeout = 30 * time.Second

// chromiumPath skips the test unless COMPUTE_UI_TEST=1 and then returns
// the browser to drive, failing when there is none.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if os.Getenv("COMPUTE_UI_TEST") != "1" {
		t.Skip("browser tests run with COMPUTE_UI_TEST=1 (make test-ui)")
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("COMPUTE_UI_TEST=1 but no Chromium is installed: apt-get install -y chromium")
	return ""
}

// browser is one headless Chromium; each tab has its own sessionStorage,
// so each signs in on its own.
type browser struct {
	ctx     context.Context
	shots   string // where screenshots go
	mu      sync.Mutex
	dialogs []string // messages of the confirm() dialogs accepted
	errs    []string // script errors, console errors and policy violations
	urls    []string // every address a tab requested or moved to, fragment included
	// tabURLs are the addresses each tab (by name) requested.
	tabURLs map[string][]string
}

func newBrowser(t *testing.T, execPath string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(execPath), chromedp.WindowSize(1280, 800))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root with its sandbox
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", execPath, err)
	}
	b := &browser{ctx: ctx, shots: t.TempDir()}
	if os.Getenv("COMPUTE_UI_SCREENSHOTS") == "1" {
		b.shots = filepath.Join("..", "docs", "console")
		if err := os.MkdirAll(b.shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, e := range b.errs {
			t.Errorf("browser: %s", e)
		}
	})
	return b
}

// tab is one browser tab, bound to the test (or subtest) that uses it.
type tab struct {
	b    *browser
	ctx  context.Context
	name string
	t    *testing.T
}

// tab opens a tab at 1280×800 that accepts every confirm() (recording its
// message) and records script errors, Content-Security-Policy violations
// and any other dialog (alert, prompt), which fail the test at its end.
func (b *browser) tab(t *testing.T, name string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatalf("open tab %s: %v", name, err)
	}
	err := chromedp.Listen(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch e := ev.(type) {
		case *page.EventJavascriptDialogOpening:
			// The console asks with confirm() and never alerts: an alert
			// or a prompt is a script that is not the console's (the XSS
			// payloads of the tests call alert()).
			if e.Type == page.DialogTypeConfirm {
				b.dialogs = append(b.dialogs, e.Message)
			} else {
				b.errs = append(b.errs, fmt.Sprintf("%s: a script opened a %s dialog: %q", name, e.Type, e.Message))
			}
			go chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := cdp.Call(ctx, tg, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
				return err
			}))
		case *network.EventRequestWillBeSent:
			b.urls = append(b.urls, e.Request.URL+e.Request.URLFragment)
			if b.tabURLs == nil {
				b.tabURLs = map[string][]string{}
			}
			b.tabURLs[name] = append(b.tabURLs[name], e.Request.URL)
		case *page.EventNavigatedWithinDocument:
			b.urls = append(b.urls, e.URL)
		case *runtime.EventExceptionThrown:
			msg := e.ExceptionDetails.Text
			if e.ExceptionDetails.Exception != nil {
				msg += " " + e.ExceptionDetails.Exception.Description
			}
			b.errs = append(b.errs, name+": "+msg)
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				b.errs = append(b.errs, name+": console.error")
			}
		case *cdplog.EventEntryAdded:
			// Network errors are expected: the console probes optional
			// endpoints (404) and the tests provoke refusals.
			if e.Entry.Level == cdplog.EntryLevelError && e.Entry.Source != cdplog.EntrySourceNetwork {
				b.errs = append(b.errs, fmt.Sprintf("%s: %s: %s", name, e.Entry.Source, e.Entry.Text))
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return &tab{b: b, ctx: ctx, name: name, t: t}
}

// in binds the tab to a subtest, so failures are reported there.
func (tb *tab) in(t *testing.T) *tab {
	c := *tb
	c.t = t
	return &c
}

// do runs actions within stepTimeout, failing with what on error.
func (tb *tab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.t.Fatalf("%s: %s: %v", tb.name, what, err)
	}
}

// waitFor polls a JavaScript predicate until it holds, failing with what.
func (tb *tab) waitFor(what, predicate string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](predicate, chromedp.WithPollingTimeout(stepTimeout),
		chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		tb.t.Fatalf("%s: waiting until %s: %v\n%s", tb.name, what, err, tb.describe())
	}
}

// clickWhenShown waits until selector matches and clicks the element in
// the same JavaScript turn that found it. chromedp.Click finds the node,
// then clicks it in a later message: a list that re-renders in between
// (an event arriving on the page's stream) leaves it a node that no longer
// exists ("Could not find node with given id"). Not for a click that opens
// a dialog, which would block the evaluation.
func (tb *tab) clickWhenShown(what, selector string) {
	tb.t.Helper()
	tb.waitFor(what, fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false; e.click(); return true })()`, selector))
}

// describe is where the tab is and what it shows, for a failure message.
func (tb *tab) describe() string {
	ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		`location.hash + '\n' + (document.querySelector('#page')?.innerText ?? document.body.innerText).slice(0, 3000)`))
	if err != nil {
		return "(page unreadable: " + err.Error() + ")"
	}
	return "page " + s
}

// eval evaluates a JavaScript expression (a promise is awaited).
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("%s: evaluate %s: %v", tb.name, expr, err)
	}
	return v
}

// open navigates to a console address ("#/events") within the page, as a
// link would (no reload), and waits until the new page shows ready (a
// selector within it). The router builds a fresh page element per visit,
// so marking the old one tells the two apart.
func (tb *tab) open(hash, ready string) {
	tb.t.Helper()
	eval[chromedp.Void](tb, fmt.Sprintf(`(() => {
		document.querySelector('#page > .page')?.setAttribute('data-stale', '');
		if (location.hash === %[1]q) window.dispatchEvent(new HashChangeEvent('hashchange'));
		else location.hash = %[1]q;
	})()`, hash))
	tb.waitFor(hash+" shows "+ready, fmt.Sprintf(
		`!!document.querySelector('#page > .page:not([data-stale])')?.querySelector(%q)`, ready))
}

// signIn opens the console and signs in with token, from the keyboard.
func (tb *tab) signIn(base, token string) {
	tb.t.Helper()
	tb.do("sign in",
		chromedp.Navigate(base+"/ui/"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), token+kb.Enter),
		chromedp.WaitVisible(chromedp.CSS("#whoami")))
}

// blockURL makes the tab fail requests to url (as a network outage would)
// or lets them through again.
func (tb *tab) blockURL(url string, block bool) {
	tb.t.Helper()
	tb.do("block "+url, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, network.SetBlockedURLs, network.SetBlockedURLsParams{
			URLPatterns: []*network.BlockPattern{{URLPattern: url, Block: block}}})
		return err
	}))
}

// text is the visible text of the first element matching a selector.
func (tb *tab) text(selector string) string {
	tb.t.Helper()
	return eval[string](tb, fmt.Sprintf(`document.querySelector(%q)?.innerText ?? ''`, selector))
}

// screenshot saves the viewport as <name>.png.
func (tb *tab) screenshot(name string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		tb.t.Fatalf("%s: screenshot %s: %v", tb.name, name, err)
	}
	if err := os.WriteFile(filepath.Join(tb.b.shots, name+".png"), png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
}

// acceptedDialog reports whether a confirm() with message was accepted.
func (b *browser) acceptedDialog(message string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.dialogs {
		if m == message {
			return true
		}
	}
	return false
}

// inertCheck lists what markup injected into the page would leave behind:
// an event handler attribute (the console adds its listeners with
// addEventListener, never as attributes), a link that leaves the console
// (every link of the console is a #/ address, so a javascript: or data:
// URL is a hole), and an element the console never creates in the body
// (script, iframe, object, embed, base, meta, link, form target, an image
// other than the logo).
const inertCheck = `(() => {
	const bad = [];
	for (const el of document.body.querySelectorAll('*')) {
		for (const a of el.attributes) {
			if (/^on/i.test(a.name)) bad.push(el.localName + '[' + a.name + '=' + JSON.stringify(a.value) + ']');
			if (/^(href|src|xlink:href|action|formaction|srcdoc)$/i.test(a.name) && /^\s*(javascript|data|vbscript):/i.test(a.value))
				bad.push(el.localName + '[' + a.name + '=' + JSON.stringify(a.value) + ']');
		}
		if (el.localName === 'a' && !(el.getAttribute('href') || '#').startsWith('#'))
			bad.push('a[href=' + JSON.stringify(el.getAttribute('href')) + ']');
		if (['script', 'iframe', 'frame', 'object', 'embed', 'base', 'meta', 'link', 'style', 'foreignobject'].includes(el.localName.toLowerCase()))
			bad.push(el.localName);
		if (el.localName === 'img' && !el.classList.contains('logo')) bad.push('img[src=' + JSON.stringify(el.getAttribute('src')) + ']');
	}
	return bad.join(', ');
})()`

// inert fails the test when the page holds anything inertCheck finds.
func (tb *tab) inert(where string) {
	tb.t.Helper()
	if bad := eval[string](tb, inertCheck); bad != "" {
		tb.t.Fatalf("%s: %s: markup from the data reached the page: %s", tb.name, where, bad)
	}
}

// showsText waits until the page shows text (its visible text or, for
// what sits in attributes and SVG, the text content of selector), as text.
func (tb *tab) showsText(where, selector, text string) {
	tb.t.Helper()
	tb.waitFor(fmt.Sprintf("%s shows %q as text", where, text), fmt.Sprintf(
		`[...document.querySelectorAll(%q)].some((e) => e.textContent.includes(%q))`, selector, text))
}

// requested is every address the browser's tabs requested or moved to so
// far, fragments included.
func (b *browser) requested() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.urls...)
}

// requestedBy is every address the tab named name requested so far.
func (b *browser) requestedBy(name string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.tabURLs[name]...)
}
