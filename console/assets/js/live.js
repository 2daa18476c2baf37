// The live side of the console: one EventStream for the signed-in token,
// a bounded buffer of what it delivered (the Events page shows it), and
// subscriptions for pages that redraw when something they show changes.

import {EventStream} from './sse.js';

const BUFFER = 1000;

/** Everything live, for one signed-in token. */
export class Live {
  /**
   * onUnauthenticated() when the token is refused (revoked, expired);
   * onRefused({code, message}) when the stream is refused for good
   * otherwise (the tenant suspended): see EventStream.refuse.
   */
  constructor(token, onUnauthenticated, onRefused = () => {}) {
    this.events = []; // newest last: {id, envelope}
    this.seen = new Set();
    this.subscribers = new Set();
    this.statusSubscribers = new Set();
    this.stream = new EventStream({
      token,
      onEvent: (envelope, id) => this.deliver(envelope, id),
      onStatus: () => this.statusSubscribers.forEach((fn) => fn(this.stream)),
      onUnauthenticated,
      onRefused,
    }).start();
  }

  stop() { this.stream.stop(); }

  deliver(envelope, id) {
    // Last-Event-ID resumption repeats nothing; the check keeps the
    // buffer honest should a server ever do so.
    if (this.seen.has(envelope.id)) return;
    this.seen.add(envelope.id);
    this.events.push({id, envelope});
    if (this.events.length > BUFFER) this.seen.delete(this.events.shift().envelope.id);
    this.subscribers.forEach((fn) => fn(envelope, id));
  }

  /** Adds events read from GET /v1/events (oldest first) before the live ones. */
  addHistory(envelopes) {
    const fresh = envelopes.filter((e) => !this.seen.has(e.id));
    fresh.forEach((e) => this.seen.add(e.id));
    this.events.unshift(...fresh.map((envelope) => ({id: '', envelope})));
    return fresh.length;
  }

  /** fn(envelope, position) for every new event; returns the unsubscribe. */
  subscribe(fn) {
    this.subscribers.add(fn);
    return () => this.subscribers.delete(fn);
  }

  /** fn(stream) on every change of the stream's state. */
  onStatus(fn) {
    this.statusSubscribers.add(fn);
    fn(this.stream);
    return () => this.statusSubscribers.delete(fn);
  }

  /**
   * Calls reload(position) when matching events arrive, with the position
   * of the last one: the page re-reads with ?minPosition= so the read
   * model it gets already holds that event. It waits 150 ms to gather a
   * burst into one reload, but from the first event of it, not the last:
   * on a busy fleet (or with a tenant that books back to back) events never
   * pause for 150 ms, and a wait restarted by every event would never end,
   * so the page would stop following the stream. One reload runs at a time
   * (a slow one is not overtaken by a newer one that could finish first);
   * events that arrive during it bring another one after it.
   */
  whenChanged(match, reload) {
    let timer = 0, position = '', running = false, dirty = false, stopped = false;
    const run = async () => {
      timer = 0;
      running = true;
      dirty = false;
      try {
        await reload(position);
      } finally {
        running = false;
        if (dirty && !stopped) timer = setTimeout(run, 150);
      }
    };
    const off = this.subscribe((envelope, id) => {
      if (!match(envelope)) return;
      position = id;
      dirty = true;
      if (!timer && !running) timer = setTimeout(run, 150);
    });
    return () => { stopped = true; off(); clearTimeout(timer); };
  }
}

/** Matches events whose type starts with one of prefixes ("reservation."). */
export const ofTypes = (...prefixes) => (e) => prefixes.some((p) => e.type.startsWith(p));
