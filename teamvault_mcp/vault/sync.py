"""Cold sync: the notes the content cache lacks, fetched by folder archives where that pays, one by one elsewhere.

``plan.py`` decides what comes how; :class:`ProjectSync` runs the plan for one project, for
whoever needs the notes: the server's warm-up in the background, and any search. It has one
queue of jobs; each participant lends it workers (each with a client of its own call: its
budget, its cancel token) that take jobs holding notes it wants, and waits for those that
others are fetching already, so no note is fetched twice at once — by note, not by hash: a note
two listings gave two hashes (a colleague wrote in between) rides on the fetch under way, which
brings the newer text. A worker never waits while it holds a job (background work steps aside
only between jobs), so whoever waits for a note waits only for its download. An archive goes to an
unnamed temp file under the cache (memory holds one chunk; the most it may take counts in the
cache's bound while the file exists, and an archive that does not fit beside those on their way
in is not downloaded: its notes come one by one), is read by ``archive.py``, which
checks every entry against the listing, and only checked entries enter the cache; any note
it does not give comes one by one. A job cut short (a cancel, the budget) goes back to the
queue, for another participant or the next search.

The archive route is older than some servers: a 405 on it, or a 404 that a probe confirms is
an unknown route's (:meth:`TeamVaultClient.has_folder_download`), is remembered for the
session (:class:`FolderRoute`), and notes come one by one from then on.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import tempfile
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import IO, TYPE_CHECKING

from teamvault_mcp.errors import CallCancelledError, HTTPStatusError, TeamVaultError
from teamvault_mcp.vault.archive import ArchiveRefused, Skipped, verified_entries
from teamvault_mcp.vault.cache import DEFAULT_MAX_BYTES, ContentCache, Spool
from teamvault_mcp.vault.plan import ArchiveJob, SingleJob, plan

if TYPE_CHECKING:
    from teamvault_mcp.vault.client import TeamVaultClient
    from teamvault_mcp.vault.records import VaultFile

log = logging.getLogger(__name__)

#: Entries put into the cache at once (one change-log write, one eviction pass), so memory holds no more.
CACHE_BATCH = 256

#: What a participant is told when a note is settled: its key (listing hash) → the hash it was cached and
#: indexed under (the note may have changed since the listing), or None when it could not be fetched.
Settled = dict[str, str | None]


def key_of(file: VaultFile) -> str:
    """What a note is waited for by: its listed hash (an id when the server gave none)."""
    return file.content_hash or f"id:{file.id}"


class FolderRoute:
    """Whether the server has ``GET …/folders/download``: unknown until an answer tells, then remembered."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._probing = False
        self.present: bool | None = None
        self.probes = 0

    @property
    def usable(self) -> bool:
        return self.present is not False

    def after_refusal(self, error: HTTPStatusError, client: TeamVaultClient, project_id: str) -> None:
        """An archive was answered with ``error``: learn from it whether the route exists.

        A 405 says no. A 404 is what the route answers for a folder without live files too (a
        colleague may have emptied it since the listing), and what a server without the route
        answers for any unknown path — as JSON or as a Next.js HTML page: a probe tells which
        (one at a time; an archive refused meanwhile just has its notes come one by one).
        ``files_missing_on_disk`` (404) and every other status come from the route itself.
        """
        with self._lock:
            if self.present is not None or self._probing:
                return
            if error.status != 404 or error.code == "files_missing_on_disk":
                self.present = error.status != 405
                present: bool | None = self.present
            else:
                self._probing = True
                self.probes += 1
                present = None
        if present is None:
            try:
                present = client.has_folder_download(project_id)
            finally:
                with self._lock:
                    self._probing = False
                    if self.present is None:
                        self.present = present
        if present is False:
            log.info("the server has no folder archive route: notes are fetched one by one from now on")

    def succeeded(self) -> None:
        with self._lock:
            self.present = True


@dataclass
class SyncStats:
    """What the syncs of one project did (for logs, the benchmark and the tests)."""

    archives: int = 0  # archives read
    archive_notes: int = 0  # notes taken from them
    archives_failed: int = 0  # archives that gave nothing (refused, failed): their notes came one by one
    archives_declined: int = 0  # archives not downloaded: no room under the cache's bound beside the others
    singles: int = 0  # notes fetched one by one
    failed: int = 0  # notes that could not be fetched
    requeued: int = 0  # jobs put back when their worker stopped
    skipped: Skipped = field(default_factory=Skipped)


#: Called for every note fetched: (the hash it has, its bytes, whether the disk cache kept them).
OnNote = Callable[[str, bytes, bool], None]


class _Stop(Exception):
    """A worker's call was cancelled or its budget ran out: its job went back to the queue."""


@dataclass
class _Participant:
    """One caller of :meth:`ProjectSync.fetch`: the keys it waits for, and which of them may still be queued."""

    wanted: set[str]
    cursor: list[str]  # wanted keys, the next to look for last
    done: int = 0


class ProjectSync:
    """The notes of one project being fetched, by every participant that needs them (see the module's doc).

    ``on_note`` is told of every note fetched, whoever fetched it (the search index, which all
    participants share).
    """

    def __init__(self, project_id: str, cache: ContentCache | None, route: FolderRoute, on_note: OnNote) -> None:
        self.project_id = project_id
        self.cache = cache
        self.route = route
        self.on_note = on_note
        self.stats = SyncStats()
        self._cond = threading.Condition()
        self._queue: dict[int, ArchiveJob | SingleJob] = {}  # in order; a job leaves it when taken
        self._queued: dict[str, int] = {}  # key → its queued job
        self._pending: set[str] = set()  # keys queued or being fetched
        self._settled: Settled = {}  # kept while anyone takes part
        #: A note is fetched once at a time, whatever hash each listing gave it (single flight): the note (its
        #: file id) → the key it is queued or fetched under, the key → the note, and the notes wanted meanwhile
        #: under another key (a listing made after a colleague's write): they ride on that fetch.
        self._fetching: dict[str, str] = {}
        self._file_of: dict[str, str] = {}
        self._riders: dict[str, list[VaultFile]] = {}
        self._participants: list[_Participant] = []
        self._numbers = itertools.count()

    @property
    def max_archive_bytes(self) -> int:
        return self.cache.root.max_bytes if self.cache is not None else DEFAULT_MAX_BYTES

    def fetch(
        self,
        client: TeamVaultClient,
        listing: Sequence[VaultFile],
        wanted: Sequence[VaultFile],
        *,
        workers: int,
        keep_going: Callable[[], str | None],
        archive_seconds: Callable[[], float],
        scope: str | None = None,
        progress: Callable[[int, int], None] | None = None,
        step_aside: Callable[[], None] | None = None,
    ) -> tuple[str | None, Settled]:
        """Get ``wanted``: queue what nobody is fetching yet (planned against ``listing``), fetch with up to
        ``workers`` threads what this call may take, and wait for what others are fetching.

        Each thread has a fork of ``client``. ``keep_going()`` is asked before each job and after a
        failed one, and answers at once: a reason to stop ends the threads (what they were fetching
        goes back to the queue). ``step_aside()`` (background work: it waits while tool calls run) is
        called only between jobs, when the thread holds no note anyone may be waiting for. Returns the
        reason (None when every wanted note was settled) and the settled notes, by key.
        ``progress(done, total)`` is told as wanted notes are settled.
        """
        keys = {key_of(note): note for note in wanted}
        with self._cond:
            fresh = []
            for key, note in keys.items():
                if key in self._pending or key in self._settled:
                    continue
                self._pending.add(key)
                if note.id in self._fetching:  # the same note under another hash: wait for that fetch
                    self._riders.setdefault(note.id, []).append(note)
                else:
                    self._fetching[note.id], self._file_of[key] = key, note.id
                    fresh.append(note)
            jobs = plan(
                listing, fresh, scope=scope, archives=self.route.usable, max_archive_bytes=self.max_archive_bytes
            )
            self._enqueue(jobs)
            me = _Participant(set(keys), [])
            me.cursor = self._cursor(me.wanted)
            me.done = sum(1 for key in keys if key in self._settled)
            self._participants.append(me)
        stopped: list[str] = []
        try:
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sync") as pool:
                for _ in range(workers):
                    pool.submit(self._worker, client, me, keep_going, archive_seconds, progress, stopped, step_aside)
        finally:
            with self._cond:
                self._participants.remove(me)
                settled = {key: self._settled[key] for key in keys if key in self._settled}
                if not self._participants:
                    self._settled.clear()
        return (stopped[0] if stopped else None), settled

    def pending(self) -> int:
        """Notes queued or being fetched."""
        with self._cond:
            return len(self._pending)

    def participants(self) -> int:
        """Callers of :meth:`fetch` now (the warm-up, searches)."""
        with self._cond:
            return len(self._participants)

    # -- the queue (callers hold self._cond) -----------------------------------------------------------

    def _enqueue(self, jobs: list[ArchiveJob | SingleJob], *, first: bool = False) -> None:
        numbered = {next(self._numbers): job for job in jobs}
        for number, job in numbered.items():
            for note in job.notes:
                self._queued[key_of(note)] = number
        self._queue = {**numbered, **self._queue} if first else {**self._queue, **numbered}
        for participant in self._participants:  # a job put back: its keys may be wanted again
            participant.cursor = self._cursor(participant.wanted)
        self._cond.notify_all()

    def _cursor(self, wanted: set[str]) -> list[str]:
        """The wanted keys still queued, in queue order, the first last (it is popped)."""
        order = [key_of(note) for job in self._queue.values() for note in job.notes]
        return [key for key in reversed(order) if key in wanted]

    def _take(self, me: _Participant) -> ArchiveJob | SingleJob | None:
        """The next queued job holding a note ``me`` wants, out of the queue."""
        while me.cursor:
            number = self._queued.get(me.cursor.pop())
            if number is None or number not in self._queue:
                continue  # settled, or being fetched
            job = self._queue.pop(number)
            for note in job.notes:
                self._queued.pop(key_of(note), None)
            return job
        return None

    def _settle(self, keys: Settled, *, failed: int = 0) -> None:
        with self._cond:
            settling = list(keys.items())
            while settling:
                key, content_hash = settling.pop()
                self._pending.discard(key)
                self._settled[key] = content_hash
                for participant in self._participants:
                    participant.done += key in participant.wanted
                settling += self._riders_of(key, content_hash)
            self.stats.failed += failed
            self._cond.notify_all()

    def _riders_of(self, key: str, content_hash: str | None) -> list[tuple[str, str | None]]:
        """The notes that waited for ``key``'s fetch under another hash: settled by it when it got the content
        they were listed with (returned, to be settled too); queued to be fetched themselves when not."""
        file_id = self._file_of.pop(key, None)
        if file_id is None or self._fetching.get(file_id) != key:
            return []
        del self._fetching[file_id]
        riders = self._riders.pop(file_id, [])
        shared = [(key_of(rider), content_hash) for rider in riders if content_hash == rider.content_hash]
        unmet = [rider for rider in riders if content_hash is None or content_hash != rider.content_hash]
        if unmet:  # it changed again, or the fetch failed: one fetch of its own, the others ride on it
            first, *rest = unmet
            self._fetching[file_id], self._file_of[key_of(first)] = key_of(first), file_id
            if rest:
                self._riders[file_id] = rest
            self._enqueue([SingleJob(first)], first=True)
        return shared

    def _requeue(self, jobs: list[ArchiveJob | SingleJob], *, stopped: bool = False) -> None:
        with self._cond:
            self._enqueue(jobs, first=True)  # first in line: someone is waiting for them
            if stopped:
                self.stats.requeued += len(jobs)

    def _count(self, **counts: int) -> None:
        with self._cond:
            for name, value in counts.items():
                setattr(self.stats, name, getattr(self.stats, name) + value)

    # -- one worker ----------------------------------------------------------------------------------------

    def _worker(
        self,
        base: TeamVaultClient,
        me: _Participant,
        keep_going: Callable[[], str | None],
        archive_seconds: Callable[[], float],
        progress: Callable[[int, int], None] | None,
        stopped: list[str],
        step_aside: Callable[[], None] | None,
    ) -> None:
        client = base.fork()
        try:
            while True:
                if step_aside is not None:
                    step_aside()  # holding nothing: whoever waits for a note is not waiting for this thread
                reason = keep_going()
                if reason is not None:
                    stopped.append(reason)
                    return
                with self._cond:
                    job = self._take(me)
                    if job is None:
                        waiting = bool(me.wanted & self._pending)
                        done = me.done
                        if waiting:
                            self._cond.wait(0.05)  # others are fetching what is wanted: wait for them
                        moved = me.done != done
                if job is None:
                    if moved and progress is not None:  # notes others fetched count as this call's progress
                        progress(me.done, len(me.wanted))
                    if not waiting:
                        return
                    continue
                try:
                    self._run(job, client, archive_seconds, keep_going)
                except _Stop:
                    stopped.append(keep_going() or "the call was cancelled")
                    return
                finally:
                    if progress is not None:
                        progress(me.done, len(me.wanted))
        finally:
            client.close()

    def _run(
        self,
        job: ArchiveJob | SingleJob,
        client: TeamVaultClient,
        archive_seconds: Callable[[], float],
        keep_going: Callable[[], str | None],
    ) -> None:
        if isinstance(job, SingleJob):
            self._single(job.note, client, keep_going)
        elif not self.route.usable:
            self._requeue([SingleJob(note) for note in job.notes])
        else:
            self._archive(job, client, archive_seconds(), keep_going)

    def _single(self, note: VaultFile, client: TeamVaultClient, keep_going: Callable[[], str | None]) -> None:
        try:
            data = client.download(self.project_id, note.id)
        except CallCancelledError:
            self._requeue([SingleJob(note)], stopped=True)
            raise _Stop() from None
        except TeamVaultError as error:
            if keep_going() is not None:  # the budget ran out on it: not the note's fault
                self._requeue([SingleJob(note)], stopped=True)
                raise _Stop() from None
            log.info("cannot fetch %s: %s", note.path, error)
            self._settle({key_of(note): None}, failed=1)
            return
        content_hash = hashlib.sha256(data).hexdigest()  # the note may have changed since the listing
        stored = self.cache is not None and self.cache.put_many([(content_hash, data)]) == 1
        self.on_note(content_hash, data, stored)
        self._count(singles=1)
        self._settle({key_of(note): content_hash})

    def _archive(
        self, job: ArchiveJob, client: TeamVaultClient, seconds: float, keep_going: Callable[[], str | None]
    ) -> None:
        limit = min(job.max_download, self.max_archive_bytes)
        spool = self._spool(limit)
        if spool is None:
            log.info(
                "the archive of %s/ does not fit in the cache beside the archives on their way in; its notes come "
                "one by one",
                job.folder,
            )
            self._count(archives_declined=1)
            self._requeue([SingleJob(note) for note in job.notes])
            return
        with spool:
            try:
                client.download_folder(self.project_id, job.folder, spool.file, max_bytes=limit, seconds=seconds)
            except CallCancelledError:
                self._requeue([job], stopped=True)
                raise _Stop() from None
            except TeamVaultError as error:
                if keep_going() is not None:
                    self._requeue([job], stopped=True)
                    raise _Stop() from None
                if isinstance(error, HTTPStatusError):
                    self.route.after_refusal(error, client, self.project_id)
                log.info("the archive of %s/ failed (%s); its notes come one by one", job.folder, error)
                self._count(archives_failed=1)
                self._requeue([SingleJob(note) for note in job.notes])
                return
            self.route.succeeded()
            spool.fit()  # the entries it brings need the room it does not
            taken, stop = self._take_entries(job, spool.file, keep_going)
        self._count(archives=1 if taken else 0, archives_failed=0 if taken or stop else 1, archive_notes=len(taken))
        leftover = {name: note for name, note in job.expected.wanted.items() if key_of(note) not in taken}
        if stop is not None and leftover:  # the rest stays queued as the archive it came in: cheaper than one by one
            self._requeue([replace(job, expected=replace(job.expected, wanted=leftover))], stopped=True)
            raise _Stop()
        if leftover:
            log.info("%d notes of %s/ were not taken from its archive; they come one by one", len(leftover), job.folder)
            self._requeue([SingleJob(note) for note in leftover.values()])

    def _take_entries(
        self, job: ArchiveJob, spool: IO[bytes], keep_going: Callable[[], str | None]
    ) -> tuple[set[str], str | None]:
        """Put the archive's checked entries in the cache, in batches, while ``keep_going`` says nothing (a folder
        of 25,000 notes takes longer to read than a call has); their keys, and why it stopped early (None)."""
        taken: set[str] = set()
        batch: list[tuple[VaultFile, bytes]] = []
        skipped = Skipped()
        stop: str | None = None
        try:
            for note, data in verified_entries(spool, job.expected, max_total=self.max_archive_bytes, skipped=skipped):
                batch.append((note, data))
                if len(batch) >= CACHE_BATCH:
                    taken |= self._keep(batch)
                    batch = []
                    stop = keep_going()
                    if stop is not None:
                        break
            taken |= self._keep(batch)
        except ArchiveRefused as refused:  # raised before any entry is read
            log.warning("the archive of %s/ is refused: %s", job.folder, refused)
        with self._cond:
            total = self.stats.skipped
            for name in ("absent", "oversize", "mismatch", "unreadable", "unknown"):
                setattr(total, name, getattr(total, name) + getattr(skipped, name))
        return taken, stop

    def _keep(self, batch: list[tuple[VaultFile, bytes]]) -> set[str]:
        """Cache a batch of checked entries and tell ``on_note``; their keys, settled."""
        if not batch:
            return set()
        hashes = [(note.content_hash or "", data) for note, data in batch]  # planned into an archive only with one
        stored = self.cache.put_many(hashes) if self.cache is not None else 0
        for content_hash, data in hashes:
            self.on_note(content_hash, data, stored == len(batch))
        self._settle({key_of(note): note.content_hash for note, _ in batch})
        return {key_of(note) for note, _ in batch}

    def _spool(self, limit: int) -> Spool | None:
        """A temp file for an archive of at most ``limit`` bytes, counted in the cache's bound (None: no room)."""
        if self.cache is None:
            return Spool(tempfile.TemporaryFile())  # no cache directory, no bound to count it in
        return self.cache.spool(limit)


class VaultSync:
    """What the syncs of one server share for the session: the archive route's presence, one
    :class:`ProjectSync` per project."""

    def __init__(self) -> None:
        self.route = FolderRoute()
        self._lock = threading.Lock()
        self._projects: dict[str, ProjectSync] = {}

    def existing(self, project_id: str) -> ProjectSync | None:
        """The project's sync, if one was made (its stats say what the syncs did)."""
        with self._lock:
            return self._projects.get(project_id)

    def project(self, project_id: str, cache: ContentCache | None, on_note: OnNote) -> ProjectSync:
        """The project's sync, made on first use (its ``cache`` and ``on_note`` are the first caller's)."""
        with self._lock:
            found = self._projects.get(project_id)
            if found is None:
                found = self._projects[project_id] = ProjectSync(project_id, cache, self.route, on_note)
            return found
