"""A local model prepared in a background thread while the app serves: downloaded, built,
checked against its reference vectors, then handed to semantic search.

One preparation per model per process (the `serve` check and the app it then runs share it);
across processes the model's own file lock makes one process download and build while the
others wait for its files. Progress goes to the log (every tenth of the download) and to
/readyz.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from memory_bank.models import local_model

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger("memory_bank.models")

_preparations: dict[str, Preparation] = {}
_lock = threading.Lock()


class Unavailable(RuntimeError):
    """The model could not be prepared; search stays lexical (the reason is in the log)."""


class Preparation(local_model.Report):
    """One model's preparation, run once in a daemon thread."""

    def __init__(self, chosen: local_model.Plan) -> None:
        self.plan = chosen
        self.model = chosen.model
        self.provider: local_model.LocalProvider | None = None
        self.error = ""
        self.finished = threading.Event()
        self._phase = "waiting to start"
        self._step = -1
        self._thread = threading.Thread(target=self._run, name="model-prepare", daemon=True)

    def start(self) -> None:
        """Begin in the background."""
        size = self.plan.download_bytes
        log.info(
            "preparing %s in the background%s; search answers lexically until it is ready",
            self.plan.name,
            f" (a download of {size / 1e6:.0f} MB, once)" if size else "",
        )
        self._thread.start()

    def _run(self) -> None:
        try:
            files = self.plan.present() or self.plan.prepare(self)
            self._phase = "checking its reference vectors"
            self.provider = local_model.provider(self.plan, files)
            self._phase = "ready"
            log.info("%s is ready: search is hybrid from now on", self.model)
        except Exception as exc:  # any failure leaves search lexical, with the reason shown
            self.error = str(exc) or type(exc).__name__
            self._phase = "failed"
            log.error("semantic search is off: %s", self.error)
        finally:
            self.finished.set()

    def downloading(self, done: int, total: int | None) -> None:
        """Record and log (every tenth) the download's progress."""
        if not total:
            self._phase = f"downloading ({done / 1e6:.0f} MB so far)"
            return
        share = min(done * 100 // total, 100)
        self._phase = f"downloading {share}% ({done / 1e6:.0f} of {total / 1e6:.0f} MB)"
        if share // 10 != self._step:
            self._step = share // 10
            log.info("%s: %s", self.plan.name, self._phase)

    def building(self) -> None:
        """Record that the conversion runs."""
        self._phase = "building int8 ONNX (about 30 s)"

    def status(self) -> str:
        """One line for /readyz."""
        if self.provider is not None:
            return f"embeddings {self.model}: ready"
        if self.finished.is_set():
            return f"embeddings {self.model}: failed, search is lexical: {self.error}"
        return f"embeddings {self.model}: {self._phase}; search is lexical until it is ready"

    def stand_in(self) -> _StandIn:
        """A provider that waits for this preparation."""
        return _StandIn(self)


class _StandIn:
    """The provider while the model is prepared: embed waits for it, then embeds. Its callers
    are the ones that want vectors now (reindex --vectors, a test draining by hand); the
    outbox worker does not call it while the model is prepared (domain/vector_jobs.py), so a
    stop never waits for a model."""

    def __init__(self, preparation: Preparation) -> None:
        self.model = preparation.model
        self._preparation = preparation

    def embed(self, texts: list[str]) -> np.ndarray:
        """The texts' vectors, once the model is ready."""
        preparation = self._preparation
        preparation.finished.wait()
        if preparation.provider is None:
            raise Unavailable(preparation.error)
        return preparation.provider.embed(texts)


def prepare_in_background(chosen: local_model.Plan) -> Preparation:
    """This process's preparation of the model, started on first call."""
    with _lock:
        found = _preparations.get(chosen.model)
        if found is None or (found.finished.is_set() and found.provider is None):
            found = _preparations[chosen.model] = Preparation(chosen)
            found.start()
        return found
