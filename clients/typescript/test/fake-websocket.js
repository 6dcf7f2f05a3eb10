// An in-memory WebSocket for the connection's unit tests: the test plays the server, frame by
// frame, with no network and no timing.

/**
 * Makes a WebSocket constructor whose sockets call `server(socket)` when they connect and
 * `socket.onClientFrame(message)` for each frame the client sends.
 */
export function fakeWebSocket(server) {
  const sockets = [];
  class FakeWebSocket {
    constructor(url) {
      this.url = url;
      this.readyState = 0;
      this.sent = [];
      this.listeners = new Map();
      this.onClientFrame = () => {};
      sockets.push(this);
      queueMicrotask(() => {
        this.readyState = 1;
        this.emit('open', {});
        server(this);
      });
    }
    addEventListener(type, listener) {
      if (!this.listeners.has(type)) this.listeners.set(type, []);
      this.listeners.get(type).push(listener);
    }
    emit(type, event) {
      for (const l of this.listeners.get(type) ?? []) l(event);
    }
    send(text) {
      if (this.readyState !== 1) throw new Error('not open');
      const message = JSON.parse(text);
      this.sent.push(message);
      queueMicrotask(() => this.onClientFrame(message, text));
    }
    /** The client closes: a Close frame, then the close event. */
    close(code = 1005, reason = '') {
      if (this.readyState >= 2) return;
      this.closedByClient = true;
      this.readyState = 3;
      queueMicrotask(() => this.emit('close', { code, reason }));
    }
    // Server side.
    deliver(message) {
      this.emit('message', { data: typeof message === 'string' ? message : JSON.stringify(message) });
    }
    /** The connection drops (or the server closes after a bye). */
    drop(code = 1006, reason = '') {
      if (this.readyState >= 2) return;
      this.readyState = 3;
      this.emit('close', { code, reason });
    }
  }
  FakeWebSocket.sockets = sockets;
  return FakeWebSocket;
}

/** A welcome for the fake server to send. */
export function welcome(session, token = `resume-${session}`) {
  return {
    type: 'welcome',
    protocol: 1,
    player: 'd-000000000000000000000000',
    session,
    profile: { coins: 0, experience: 0, tutorial_stage: 0 },
    resume_token: token,
    locale: 'en',
    locales: ['en', 'ja', 'en-XA'],
  };
}

/** Waits for pending microtasks and immediate callbacks. */
export function settle() {
  return new Promise((resolve) => setImmediate(resolve));
}
