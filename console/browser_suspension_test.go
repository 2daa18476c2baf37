package console_test

import (
	"net/http"
	"strings"
	"testing"
)

// An operator suspends a tenant from the capacity page, with a reason:
// the tenant's card shows it suspended, since when and why, the tenant's
// token is refused with that reason, and Resume lifts it.
func TestBrowserTenantSuspension(t *testing.T) {
	chromium := chromiumPath(t)
	d := startDemo(t)
	b := newBrowser(t, chromium)
	op := b.tab(t, "operator")
	op.signIn(d.url, d.operator)
	const card = `#quotas section[data-tenant="acme"]`
	op.open("#/capacity", card+" #suspend-reason-acme")
	if got := op.text(card); strings.Contains(got, "Suspended since") {
		t.Fatalf("acme shows a suspension before any: %q", got)
	}
	if eval[bool](op, `!!document.querySelector('#quotas section[data-tenant="ops"] #suspend-reason-ops')`) {
		t.Fatal("the operator's own tenant has a suspend control")
	}

	// The card is redrawn by every event the page's stream brings: fill
	// and click in one JavaScript turn (a click on a button redrawn away
	// still runs its handler), and after it, since the confirm() it opens
	// would block the evaluation.
	clickLater(op, `const i = document.querySelector('#suspend-reason-acme'); if (!i) return false;
		i.value = 'invoice 2026-11 unpaid'; const b = i.parentElement.querySelector('button');`)
	op.waitFor("the card shows the suspension", `document.querySelector('`+card+` .badge-suspended')?.innerText === 'suspended' &&
		document.querySelector('`+card+` .suspended-reason')?.innerText === 'invoice 2026-11 unpaid'`)
	if !b.acceptedDialog("Suspend tenant acme? Every request with its tokens will be refused.") {
		t.Fatal("suspend did not ask for confirmation")
	}
	if got := op.text(card); !strings.Contains(got, "Suspended since 20") {
		t.Fatalf("the card does not say since when: %q", got)
	}
	body := d.call(t, d.tenant, http.MethodGet, "/v1/whoami", nil, http.StatusForbidden)
	if msg, _ := body["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "invoice 2026-11 unpaid") {
		t.Fatalf("acme's token is refused with %v", body)
	}

	clickLater(op, `const b = document.querySelector('`+card+` .toolbar button'); if (!b || b.innerText !== 'Resume') return false;`)
	op.waitFor("the card shows no suspension", `!!document.querySelector('`+card+` #suspend-reason-acme') &&
		!document.querySelector('`+card+` .badge-suspended')`)
	if !b.acceptedDialog("Resume tenant acme?") {
		t.Fatal("resume did not ask for confirmation")
	}
	d.call(t, d.tenant, http.MethodGet, "/v1/whoami", nil, http.StatusOK)
}

// clickLater waits until find (statements that return false while the
// element is not there, and otherwise leave the button in b) finds the
// button, then clicks it once the evaluation has returned.
func clickLater(tb *tab, find string) {
	tb.t.Helper()
	tb.waitFor("the button is shown", `(() => { `+find+` setTimeout(() => b.click(), 0); return true })()`)
}
