// Deletes wait out an undo window before they are sent; leaving the page sends them at once.

/** At most one delete waits at a time: a new one sends the previous one now. */
export class PendingDelete {
  constructor(windowMs, send) {
    this.windowMs = windowMs;
    this.send = send; // send(id, keepalive) -> Promise
    this.current = null;
  }

  /** Start the window for id; onClose(result) runs when it is sent or undone. */
  start(id, onClose) {
    this.flush();
    const entry = { id, onClose, timer: null };
    entry.timer = setTimeout(() => this.#commit(entry, false), this.windowMs);
    this.current = entry;
  }

  /** Cancel the waiting delete; true when there was one. */
  undo() {
    const entry = this.current;
    if (!entry) return false;
    clearTimeout(entry.timer);
    this.current = null;
    entry.onClose({ undone: true });
    return true;
  }

  /** Send the waiting delete now (keepalive when the page is going away); resolves when done. */
  flush(keepalive = false) {
    return this.current ? this.#commit(this.current, keepalive) : Promise.resolve();
  }

  #commit(entry, keepalive) {
    if (this.current !== entry) return Promise.resolve();
    clearTimeout(entry.timer);
    this.current = null;
    // The request starts now, synchronously, so a page that is unloading still sends it.
    return this.send(entry.id, keepalive).then(
      () => entry.onClose({ undone: false }),
      (problem) => entry.onClose({ undone: false, problem }),
    );
  }
}
