// The event stream, GET /v1/events/stream, read with fetch() rather than
// EventSource: EventSource cannot send an Authorization header, and the
// token must not travel in the URL (URLs end up in logs and histories). So
// this module parses Server-Sent Events frames itself (SSEParser, after the
// WHATWG algorithm) and reconnects itself, sending Last-Event-ID so the
// server resumes right after the last event seen: nothing is lost or
// repeated across a reconnect.

/** Parses a text/event-stream body pushed in arbitrary chunks. */
export class SSEParser {
  /** onEvent({type, data, id}) is called per dispatched event; onRetry(ms) per retry field. */
  constructor(onEvent, onRetry = () => {}) {
    this.onEvent = onEvent;
    this.onRetry = onRetry;
    this.buf = '';
    this.data = '';
    this.type = '';
    this.lastEventId = '';
    this.started = false;
  }

  /** Feeds the next chunk of text; complete lines are processed. */
  push(chunk) {
    this.buf += chunk;
    if (!this.started && this.buf.length > 0) {
      this.started = true;
      if (this.buf.charCodeAt(0) === 0xfeff) this.buf = this.buf.slice(1);
    }
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buf);
      if (!m) return;
      // A CR at the very end may be the first half of a CRLF split
      // across chunks: wait for the next chunk to tell.
      if (m[0] === '\r' && m.index === this.buf.length - 1) return;
      const line = this.buf.slice(0, m.index);
      this.buf = this.buf.slice(m.index + m[0].length);
      this.line(line);
    }
  }

  line(line) {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) return; // a comment: the heartbeat
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event': this.type = value; break;
      case 'data': this.data += value + '\n'; break;
      case 'id': if (!value.includes('\0')) this.lastEventId = value; break;
      case 'retry': if (/^\d+$/.test(value)) this.onRetry(Number(value)); break;
      default: // unknown fields are ignored
    }
  }

  dispatch() {
    const data = this.data, type = this.type || 'message';
    this.data = '';
    this.type = '';
    if (data === '') return; // an id-only frame moves lastEventId, no event
    this.onEvent({type, data: data.slice(0, -1), id: this.lastEventId});
  }
}

const MAX_BACKOFF_MS = 30000;

/**
 * The refusals that reconnecting cannot cure, the same the Go client's
 * Subscribe ends on (client/events.go): the tenant suspended (every
 * reconnect is refused until an operator resumes it), the role or the
 * request refused, a server without the stream. UNAUTHENTICATED (a
 * revoked or expired token) signs the tab out instead, and CURSOR_EXPIRED
 * (and its 410) goes on from the live end (expired()).
 */
const FINAL = new Set(['TENANT_SUSPENDED', 'PERMISSION_DENIED', 'INVALID_ARGUMENT', 'NOT_FOUND', 'METHOD_NOT_ALLOWED']);

/** The {code, message} of an error envelope's text; {} when it is none. */
function envelopeError(text) {
  try {
    const e = JSON.parse(text).error;
    return e && typeof e.code === 'string' ? {code: e.code, message: String(e.message || '')} : {};
  } catch {
    return {};
  }
}

/** The error that ends a stream for good, carrying the server's refusal. */
function refusal(code, message) {
  return Object.assign(new Error(message || code), {refusal: {code, message: message || code}});
}

/**
 * One long-lived connection to the event stream of the signed-in token:
 * the console's own, shared by every page (the server caps streams per
 * token), or a page's filtered one (path with ?subject=, the reservation
 * page's), which the page stops when it is left. Events reach
 * onEvent(envelope, id) with the envelope decoded; onStatus(stream) is
 * called whenever state or reconnects change.
 */
export class EventStream {
  constructor({token, onEvent, onStatus = () => {}, onUnauthenticated = () => {}, onRefused = () => {},
    path = '/v1/events/stream'}) {
    Object.assign(this, {token, onEvent, onStatus, onUnauthenticated, onRefused, path});
    this.state = 'connecting';
    this.reconnects = 0;
    this.lastEventId = '';
    this.retryMs = 3000;
    this.failures = 0;
    this.gaps = 0; // times the log was pruned past the resume point
    this.refusal = null; // {code, message} of the refusal that stopped it for good
    this.abort = new AbortController();
  }

  start() { this.run(); return this; }

  stop() {
    this.abort.abort();
    if (!this.refusal) this.set('stopped');
  }

  /**
   * Stops for good on a refusal reconnecting cannot cure ({code, message}
   * of the server's error): the stream's own, or one another request of
   * the token got (a 403 TENANT_SUSPENDED). The state says which:
   * 'suspended' for TENANT_SUSPENDED, 'refused' otherwise; onRefused is
   * told once.
   */
  refuse(refusal) {
    if (this.refusal || this.state === 'signed-out') return;
    this.refusal = refusal;
    this.abort.abort();
    this.set(refusal.code === 'TENANT_SUSPENDED' ? 'suspended' : 'refused');
    this.onRefused(refusal);
  }

  set(state) {
    this.state = state;
    this.onStatus(this);
  }

  async run() {
    while (!this.abort.signal.aborted) {
      const opened = Date.now();
      try {
        await this.once();
        // The server ended the stream on purpose (its lifetime bound, a
        // shutdown): come back at once, unless it keeps ending at once.
        this.failures = Date.now() - opened < 1000 ? this.failures + 1 : 0;
      } catch (err) {
        if (this.abort.signal.aborted) return;
        if (err.unauthenticated) {
          this.set('signed-out');
          this.onUnauthenticated();
          return;
        }
        if (err.refusal) {
          this.refuse(err.refusal);
          return;
        }
        // A stream that had been up a while starts its backoff afresh.
        this.failures = Date.now() - opened > 10000 ? 1 : this.failures + 1;
        if (err.retryAfterMs) this.retryMs = Math.max(this.retryMs, err.retryAfterMs);
      }
      if (this.abort.signal.aborted) return;
      this.reconnects++;
      this.set('reconnecting');
      const wait = this.failures === 0 ? 0 : Math.min(this.retryMs * 2 ** (this.failures - 1), MAX_BACKOFF_MS);
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  /** One connection: resolves when the server ends the stream. */
  async once() {
    const headers = {Accept: 'text/event-stream', Authorization: `Bearer ${this.token}`};
    if (this.lastEventId) headers['Last-Event-ID'] = this.lastEventId;
    const res = await fetch(this.path, {headers, cache: 'no-store', signal: this.abort.signal});
    if (res.status === 401) throw Object.assign(new Error('unauthenticated'), {unauthenticated: true});
    if (res.status === 410) return this.expired(); // the resume point was pruned
    if (!res.ok) {
      const {code, message} = envelopeError(await res.text().catch(() => ''));
      if (FINAL.has(code)) throw refusal(code, message);
      const after = Number(res.headers.get('Retry-After'));
      throw Object.assign(new Error(`event stream: HTTP ${res.status}`), {retryAfterMs: after > 0 ? after * 1000 : 0});
    }
    this.set('live');
    let expired = false;
    let unauthenticated = false;
    let refused = null;
    const parser = new SSEParser((frame) => {
      if (frame.type === 'error') {
        // {"error": {"code", "message"}}: the server ends the stream for a
        // reason resuming cannot fix: the log pruned past the resume point,
        // the token revoked or expired (signed out at once, without a
        // reconnect that would only be refused), or its tenant suspended
        // (stopped, saying why, for the same reason).
        const {code, message} = envelopeError(frame.data);
        expired = code === 'CURSOR_EXPIRED';
        unauthenticated = code === 'UNAUTHENTICATED';
        if (FINAL.has(code)) refused = refusal(code, message);
        return;
      }
      this.lastEventId = frame.id;
      let envelope;
      try { envelope = JSON.parse(frame.data); } catch { return; }
      this.onEvent(envelope, frame.id);
    }, (ms) => { this.retryMs = ms; });
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      parser.push(decoder.decode(value, {stream: true}));
      // An id-only frame (the first one names the start) moves the resume
      // point even though it carries no event.
      if (parser.lastEventId && !expired) this.lastEventId = parser.lastEventId;
    }
    if (unauthenticated) throw Object.assign(new Error('unauthenticated'), {unauthenticated: true});
    if (refused) throw refused;
    if (expired) this.expired();
  }

  /**
   * Retention pruned the log past the resume point (CURSOR_EXPIRED, or 410
   * on reconnect): events were lost to this client, so it says so (gaps)
   * and goes on from the live end instead of failing for ever.
   */
  expired() {
    this.gaps++;
    this.lastEventId = '';
  }
}
