"""StopSignalWatcher: acting on SIGINT / SIGTERM while the main thread waits in TensorFlow.

Python runs a signal's handler only between two bytecodes of the main thread. During training
the main thread sits inside one call of the training loop's tf.function for a whole loop
(--iterations_per_loop steps, minutes for BERT-Base on a CPU), so a Ctrl-C, or a scheduler's
SIGTERM before its SIGKILL, would be noticed only when the loop ends. The C-level part of
Python's signal handling does run at once, and writes the signal's number to the file
descriptor given to `signal.set_wakeup_fd`; a thread reading that descriptor calls back
straight away, and the training loop, which reads a stop flag before each step, ends at the
next one.
"""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Callable


class StopSignalWatcher:
    """A context manager: inside it, `on_signal(signum)` is called from a helper thread as soon
    as one of `signals` arrives (their Python handlers must be installed: Python writes to the
    wakeup descriptor only for signals it handles). Main thread only; the process's previous
    wakeup descriptor (an asyncio loop's, in a notebook) is restored on exit."""

    def __init__(self, signals: tuple[int, ...], on_signal: Callable[[int], None]):
        self.signals = {int(sig) for sig in signals}
        self.on_signal = on_signal
        self._previous_fd = -1
        self._thread: threading.Thread | None = None

    def __enter__(self) -> StopSignalWatcher:
        self._reader, self._writer = socket.socketpair()
        self._writer.setblocking(False)
        self._previous_fd = signal.set_wakeup_fd(self._writer.fileno(), warn_on_full_buffer=False)
        self._thread = threading.Thread(target=self._watch, name="stop-signal-watcher", daemon=True)
        self._thread.start()
        return self

    def _watch(self) -> None:
        while True:
            try:
                received = self._reader.recv(64)
            except OSError:
                return
            if not received:  # the writer was closed: the watch is over
                return
            for signum in received:
                if signum in self.signals:
                    self.on_signal(signum)

    def __exit__(self, *exc_info) -> None:
        signal.set_wakeup_fd(self._previous_fd)
        self._writer.close()
        if self._thread is not None:
            self._thread.join()
        self._reader.close()
