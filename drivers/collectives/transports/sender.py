"""A link's sender thread: a rank sends while it receives, so that a schedule in which
every rank sends before it receives never waits on a full socket buffer."""

from __future__ import annotations

import queue
import threading

__all__ = ["LinkSender"]


class LinkSender:
    """Sends items on one link in order from its own thread (float32 views; subclasses
    send other things); the first error is kept and `on_error` called."""

    def __init__(self, link, on_error):
        self.link, self.on_error = link, on_error
        self.q: queue.Queue = queue.Queue()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name=f"send-{link.peer}", daemon=True)
        self.thread.start()

    def _run(self):
        while True:
            item = self.q.get()
            if item is None:
                return
            if self.error is not None:
                continue
            try:
                self._send(item)
            except BaseException as e:  # reported by the main thread
                self.error = e
                self.on_error()

    def _send(self, view):
        self.link.send_floats(view)

    def put(self, view):
        self.q.put(view)

    def finish(self):
        self.q.put(None)
        self.thread.join()
        if self.error is not None:
            raise self.error
