// Webhooks: the endpoints this token may see (a tenant its own, an
// operator every tenant's), each with its breaker state and its recent
// delivery attempts; register one, enable or disable it, rotate its secret
// (shown once) and recover (re-deliver what it missed since a time).

import {call, get, listAll} from '../api.js';
import {h, replace, table, row, badge, notice, fmtTime, toLocalInput} from '../dom.js';
import {ofTypes} from '../live.js';

export async function render(ctx) {
  const writer = ctx.me.role !== 'viewer';
  const list = h('div', {id: 'webhook-endpoints'});
  const status = h('div', {id: 'webhook-result', 'aria-live': 'polite'});
  const draw = async () => {
    const eps = await listAll('/webhook-endpoints');
    if (!ctx.alive()) return;
    replace(list, ...(eps.length ? eps.map((e) => endpointView(e, writer, status, draw)) : [h('p', {class: 'muted'}, 'No webhook endpoints.')]));
  };
  replace(ctx.el, h('h1', {}, 'Webhooks'), writer ? createForm(status, draw) : null, status, list);
  ctx.cleanup(ctx.live.whenChanged(ofTypes('webhook_endpoint.'), () => draw().catch((err) => replace(status, notice('error', err.message)))));
  await draw();
}

function createForm(status, draw) {
  const url = h('input', {type: 'url', id: 'wh-url', name: 'url', required: true, placeholder: 'https://example.com/hooks'});
  const types = h('input', {id: 'wh-types', name: 'types', placeholder: 'all, or e.g. reservation.booked,reservation.released'});
  const desc = h('input', {id: 'wh-desc', name: 'description'});
  const form = h('form', {class: 'grid-form'},
    h('div', {class: 'field'}, h('label', {for: 'wh-url'}, 'URL'), url),
    h('div', {class: 'field'}, h('label', {for: 'wh-types'}, 'Event types'), types),
    h('div', {class: 'field'}, h('label', {for: 'wh-desc'}, 'Description'), desc),
    h('div', {class: 'form-actions'}, h('button', {type: 'submit', class: 'btn btn-primary'}, 'Register')));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = {url: url.value, description: desc.value,
      eventTypes: types.value.split(',').map((t) => t.trim()).filter(Boolean)};
    try {
      const e = await call('POST', '/webhook-endpoints', {body});
      replace(status, secretNotice('Registered. Its signing secret, shown only this once:', e.secret));
      await draw();
    } catch (err) {
      replace(status, notice('error', err.message));
    }
  });
  return h('details', {class: 'card'}, h('summary', {}, 'Register an endpoint'), form);
}

function secretNotice(text, secret) {
  return notice('ok', text, ' ', h('code', {class: 'secret'}, secret));
}

function endpointView(e, writer, status, draw) {
  const path = `/webhook-endpoints/${encodeURIComponent(e.id)}`;
  const attempts = h('div', {});
  const since = h('input', {type: 'datetime-local', id: `since-${e.id}`, value: toLocalInput(new Date(Date.now() - 3600e3))});
  const run = async (label, fn) => {
    try {
      replace(status, await fn());
      await draw();
    } catch (err) {
      replace(status, notice('error', `${label}: ${err.message}`));
    }
  };
  const showAttempts = async () => {
    const page = await get(`${path}/attempts`, {limit: 20});
    replace(attempts, page.items.length ? table(['At', 'Attempt', 'Status', 'Latency', 'Error or response'],
      page.items.map((a) => row({class: a.error || a.status >= 300 ? 'failed' : null}, fmtTime(a.at), String(a.attempt),
        a.status ? String(a.status) : '—', `${a.latencyMs} ms`, a.error || a.responseSnippet || '')))
      : h('p', {class: 'muted'}, 'No attempts yet.'));
  };
  const breaker = e.circuitOpenUntil && Date.parse(e.circuitOpenUntil) > Date.now();
  return h('section', {class: 'card webhook', dataset: {endpoint: e.id}},
    h('h3', {}, h('span', {class: 'mono'}, e.url), ' ', badge(e.enabled ? 'enabled' : 'disabled', e.enabled ? 'ok' : 'warn'),
      breaker ? badge('circuit open', 'warn') : null),
    h('dl', {class: 'facts'},
      fact('Tenant', e.tenant), fact('Events', e.eventTypes.length ? e.eventTypes.join(', ') : 'all'),
      e.description ? fact('Description', e.description) : null,
      e.disabledReason ? fact('Disabled because', e.disabledReason) : null,
      fact('Failing since', e.failingSince ? fmtTime(e.failingSince) : '—'),
      fact('Failures in a row', String(e.consecutiveFailures || 0)),
      breaker ? fact('Circuit open until', fmtTime(e.circuitOpenUntil)) : null),
    h('div', {class: 'toolbar'},
      h('button', {type: 'button', class: 'btn btn-small', onclick: () => showAttempts().catch((err) => replace(attempts, notice('error', err.message)))}, 'Recent attempts'),
      writer ? [
        h('button', {type: 'button', class: 'btn btn-small', onclick: () => confirm(`${e.enabled ? 'Disable' : 'Enable'} ${e.url}?`) &&
          run('Update', async () => {
            await call('PATCH', path, {body: {enabled: !e.enabled}, headers: {'If-Match': String(e.version)}});
            return notice('ok', `${e.enabled ? 'Disabled' : 'Enabled'}.`);
          })}, e.enabled ? 'Disable' : 'Enable'),
        h('button', {type: 'button', class: 'btn btn-small', onclick: () => confirm(`Rotate the secret of ${e.url}?`) &&
          run('Rotate', async () => secretNotice('New signing secret, shown only this once:', (await call('POST', `${path}/rotate-secret`)).secret))},
        'Rotate secret'),
        h('span', {class: 'inline-form'}, h('label', {for: since.id}, 'Re-deliver since'), since,
          h('button', {type: 'button', class: 'btn btn-small', onclick: () => confirm(`Re-deliver to ${e.url} what it missed since ${since.value}?`) &&
            run('Recover', async () => {
              const r = await call('POST', `${path}/recover`, {body: {since: new Date(since.value).toISOString()}});
              return notice('ok', `${r.scheduled} deliveries scheduled${r.truncated ? ' (truncated)' : ''}.`);
            })}, 'Recover')),
      ] : null),
    attempts);
}

function fact(term, ...desc) {
  return h('div', {}, h('dt', {}, term), h('dd', {}, desc));
}
