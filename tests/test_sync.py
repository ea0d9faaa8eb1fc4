"""Cold sync by folder archives: every entry checked, bombs refused, the route's absence remembered, cancels clean.

The archives a test needs to be wrong are served by the scripted loopback server (real sockets);
the rest runs against a real local vault. Everything goes through a real MCP client: the first
search_notes of a project is the cold sync.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import itertools
import json
import os
import random
import struct
import threading
import tracemalloc
import warnings
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import anyio
import pytest
from mcp import Client
from support.fakes import PROJECT, file_record, make_config
from support.loopback import Exchange, LoopbackServer, loopback_server
from support.policies import FAST
from support.seeding import digest, seed
from support.sessions import call_once, runner_on
from support.waiting import GENEROUS, await_until

from teamvault_mcp.localvault import Fault, LocalVault
from teamvault_mcp.server.protocol import build_server
from teamvault_mcp.server.runner import ToolRunner
from teamvault_mcp.vault.archive import ArchiveRefused, Expected, Skipped, verified_entries
from teamvault_mcp.vault.interrupt import CancelToken
from teamvault_mcp.vault.plan import ARCHIVE_MIN_NOTES, ArchiveJob, SingleJob, plan
from teamvault_mcp.vault.retry import Budget, SystemClock
from teamvault_mcp.vault.sync import CACHE_BATCH, VaultSync

pytestmark = pytest.mark.anyio

FILES = f"/api/projects/{PROJECT}/files"
ARCHIVE = f"/api/projects/{PROJECT}/folders/download"


def note(number: int, word: str = "needle") -> bytes:
    return f"# Note {number}\n\nThe {word} is in note {number}.\n".encode()


def zip_of(entries: list[tuple[str, bytes]]) -> bytes:
    out = io.BytesIO()
    with warnings.catch_warnings():  # a duplicate name is what some tests want
        warnings.simplefilter("ignore")
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
            for name, data in entries:
                archive.writestr(name, data)
    return out.getvalue()


class Scripted:
    """A Team Vault on the loopback server: a listing, single downloads, and archives a test may falsify."""

    def __init__(self, server: LoopbackServer, notes: dict[str, bytes]) -> None:
        self.server = server
        self.notes = dict(notes)
        self.ids = {path: f"f{number}" for number, path in enumerate(self.notes)}
        self.listed: dict[str, bytes] = dict(self.notes)  # what the listing vouches for (a test may differ)
        self.archive_for: Callable[[str], bytes] = self.genuine
        self.archive_answer: Callable[[Exchange, str], None] | None = None
        server.route("GET", FILES, self._listing)
        server.route("GET", ARCHIVE, self._archive)
        for path, file_id in self.ids.items():
            server.route("GET", f"{FILES}/{file_id}", self._download(path))

    def genuine(self, folder: str) -> bytes:
        parent = folder.rpartition("/")[0]
        return zip_of(
            [
                (path[len(parent) + 1 :] if parent else path, data)
                for path, data in self.notes.items()
                if path.startswith(folder + "/")
            ]
        )

    def _listing(self, exchange: Exchange) -> None:
        records = [
            file_record(path, self.ids[path], contentHash=digest(data), size=str(len(data)))
            for path, data in self.listed.items()
        ]
        exchange.answer(200, json.dumps({"files": records}).encode())

    def _download(self, path: str) -> Callable[[Exchange], None]:
        return lambda exchange: exchange.answer(200, self.notes[path], "text/markdown")

    def _archive(self, exchange: Exchange) -> None:
        folder = parse_qs(exchange.query).get("path", [""])[0]
        if self.archive_answer is not None:
            self.archive_answer(exchange, folder)
        elif not folder:
            exchange.answer(400, b'{"error":{"code":"missing_path","message":"no folder"}}')
        else:
            exchange.answer(200, self.archive_for(folder), "application/zip")

    def downloads(self) -> list[str]:
        """The notes fetched one by one, by path."""
        by_id = {f"{FILES}/{file_id}": path for path, file_id in self.ids.items()}
        return sorted(by_id[e.path] for e in self.server.exchanges if e.path in by_id)

    def archives(self) -> list[str]:
        """The folders asked for as archives ('' for a probe without a path)."""
        return [parse_qs(e.query).get("path", [""])[0] for e in self.server.exchanges if e.path == ARCHIVE]


def team_folder(count: int = 10, word: str = "needle") -> dict[str, bytes]:
    return {f"team/people/n{number:02d}.md": note(number, word) for number in range(count)}


def runner_for(server: LoopbackServer, tmp_path: Path, **config: Any) -> ToolRunner:
    values = {
        "base_url": server.url,
        "cache_dir": tmp_path / "cache",
        "call_budget": 30.0,
        "structured_content": True,
        **config,
    }
    return ToolRunner(make_config(**values), clock=SystemClock(), policy=FAST)


def cache_entries(tmp_path: Path) -> set[str]:
    return {path.name for path in (tmp_path / "cache").rglob("*") if path.is_file() and len(path.name) == 64}


def sync_stats(runner: ToolRunner, project: str = PROJECT) -> Any:
    found = runner.workspace.sync.existing(project)
    assert found is not None
    return found.stats


# -- what comes how ---------------------------------------------------------------------------------------


def test_a_dense_folder_is_one_archive_and_the_rest_come_one_by_one() -> None:
    listing = [
        *(file_record(f"big/n{i}.md", f"b{i}") for i in range(ARCHIVE_MIN_NOTES)),
        *(file_record(f"small/n{i}.md", f"s{i}") for i in range(ARCHIVE_MIN_NOTES - 1)),
        file_record("root.md", "r"),
    ]
    from teamvault_mcp.vault.records import VaultFile

    files = [VaultFile.from_json(record) for record in listing]
    jobs = plan(files, files)
    assert [job.folder for job in jobs if isinstance(job, ArchiveJob)] == ["big"]
    assert sorted(job.note.path for job in jobs if isinstance(job, SingleJob)) == sorted(
        [f"small/n{i}.md" for i in range(ARCHIVE_MIN_NOTES - 1)] + ["root.md"]
    )


def test_a_folder_mostly_cached_or_mostly_images_goes_one_level_down_or_one_by_one() -> None:
    from teamvault_mcp.vault.records import VaultFile

    notes = [file_record(f"docs/new/n{i}.md", f"n{i}", size="4000") for i in range(ARCHIVE_MIN_NOTES)]
    cached = [file_record(f"docs/old/o{i}.md", f"o{i}", size="4000") for i in range(40)]
    image = file_record("pics/photo.png", "p", fileType="BINARY", size="50000000")
    beside = [file_record(f"pics/n{i}.md", f"q{i}", size="4000") for i in range(ARCHIVE_MIN_NOTES)]
    files = [VaultFile.from_json(record) for record in [*notes, *cached, image, *beside]]
    wanted = [file for file in files if file.path.startswith(("docs/new/", "pics/n"))]
    jobs = plan(files, wanted)
    # docs/ would bring 40 cached notes for 8 wanted: docs/new/ alone is archived; pics/ is a 50 MB image.
    assert [job.folder for job in jobs if isinstance(job, ArchiveJob)] == ["docs/new"]
    assert sorted(job.note.path for job in jobs if isinstance(job, SingleJob)) == sorted(
        f"pics/n{i}.md" for i in range(ARCHIVE_MIN_NOTES)
    )
    # Under a prefix, a folder is archived only if all of it was listed.
    assert not [job for job in plan(files, wanted, scope="docs/new/n") if isinstance(job, ArchiveJob)]


async def test_the_first_search_takes_a_folder_in_one_archive_and_the_root_notes_one_by_one(tmp_path: Path) -> None:
    with loopback_server() as server:
        vault = Scripted(server, {**team_folder(), "root.md": note(99)})
        text, is_error, result = await call_once(runner_for(server, tmp_path), "search_notes", query="needle")
        assert not is_error, text
        assert (result["totalNotes"], result["partial"]) == (11, False)
        assert vault.archives() == ["team"]
        assert vault.downloads() == ["root.md"]
        assert cache_entries(tmp_path) == {digest(data) for data in vault.notes.values()}


# -- every entry checked --------------------------------------------------------------------------------------


async def test_only_entries_that_match_the_listing_are_taken_the_others_come_one_by_one(tmp_path: Path) -> None:
    with loopback_server() as server:
        vault = Scripted(server, team_folder())
        genuine = dict(vault.notes)

        def falsified(folder: str) -> bytes:
            entries = dict(genuine)  # a top-level folder's entries are named by their whole paths
            entries["team/people/n00.md"] = note(
                0, "forged"
            )  # the wrong bytes, of the listed size: not the listing's hash
            del entries["team/people/n01.md"]  # missing
            entries["team/people/n02.md"] += b"more than listed\n"  # larger than the listing's size
            entries["team/people/unlisted.md"] = note(50, "stowaway")  # the listing does not know it
            entries["team/../../escape.md"] = note(51, "escapee")  # climbs out of the folder
            entries["/etc/absolute.md"] = note(52, "escapee")
            return zip_of([*entries.items(), ("team/people/n03.md", note(53, "duplicate"))])  # a name twice

        vault.archive_for = falsified
        runner = runner_for(server, tmp_path)
        _, _, result = await call_once(runner, "search_notes", query="needle")
        assert (result["totalNotes"], result["partial"]) == (10, False)
        assert vault.downloads() == ["team/people/n00.md", "team/people/n01.md", "team/people/n02.md"]
        for word in ("forged", "stowaway", "escapee", "duplicate"):
            assert (await call_once(runner, "search_notes", query=word))[2]["totalNotes"] == 0, word
        assert cache_entries(tmp_path) == {digest(data) for data in genuine.values()}  # nothing else entered
        skipped = sync_stats(runner).skipped
        assert (skipped.mismatch, skipped.absent, skipped.oversize, skipped.unknown) == (1, 1, 1, 4)
        assert not (tmp_path / "escape.md").exists() and not list(tmp_path.rglob("escape.md"))


async def test_an_archive_that_claims_more_entries_than_the_folder_holds_is_refused_unread(tmp_path: Path) -> None:
    with loopback_server() as server:
        vault = Scripted(server, team_folder())
        vault.archive_for = lambda folder: with_end_record(vault.genuine(folder), entries=60_000)
        runner = runner_for(server, tmp_path)
        _, _, result = await call_once(runner, "search_notes", query="needle")
        assert (result["totalNotes"], result["partial"]) == (10, False)
        assert vault.downloads() == sorted(vault.notes)  # every note came on its own
        assert sync_stats(runner).archives_failed == 1


def with_end_record(zipped: bytes, *, entries: int) -> bytes:
    """``zipped`` with its end record claiming ``entries`` entries."""
    at = zipped.rfind(b"PK\x05\x06")
    record = bytearray(zipped[at:])
    struct.pack_into("<2H", record, 8, entries, entries)
    return zipped[:at] + bytes(record)


def test_a_zip64_end_record_claiming_a_billion_entries_is_refused() -> None:
    central = b""
    zip64_end = struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, 10**9, 10**9, 10**9 * 46, 0)
    locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, len(central), 1)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    spool = io.BytesIO(central + zip64_end + locator + end)
    with pytest.raises(ArchiveRefused, match="1,000,000,000 entries"):
        list(verified_entries(spool, Expected("team", 10, 1), max_total=1 << 30, skipped=Skipped()))


@pytest.mark.parametrize("claimed", [None, 1_000_000])
def test_a_zip64_locator_pointing_at_a_decoy_is_refused_before_zipfile_reads_the_record_beside_it(
    claimed: int | None,
) -> None:
    # zipfile reads the zip64 end record just before the locator, whatever the locator says: here 200
    # real entries (or a claim of 1,000,000) there, and a decoy claiming 10 where the locator points.
    zipped = zip_of([(f"team/n{number}.md", note(number)) for number in range(200)])
    spool = io.BytesIO(as_zip64(zipped, entries=claimed, decoy_entries=10))
    with pytest.raises(ArchiveRefused, match="not where its locator points"):
        list(verified_entries(spool, Expected("team", 10, 1), max_total=1 << 30, skipped=Skipped()))


async def test_a_genuine_zip64_archive_is_read(tmp_path: Path) -> None:
    with loopback_server() as server:
        vault = Scripted(server, team_folder())
        vault.archive_for = lambda folder: as_zip64(vault.genuine(folder))
        with zipfile.ZipFile(io.BytesIO(vault.archive_for("team"))) as readable:  # zipfile takes it as zip64
            assert len(readable.infolist()) == 10
        runner = runner_for(server, tmp_path)
        _, _, result = await call_once(runner, "search_notes", query="needle")
        assert (result["totalNotes"], result["partial"]) == (10, False)
        assert vault.downloads() == []
        assert sync_stats(runner).archive_notes == 10


def as_zip64(zipped: bytes, *, entries: int | None = None, decoy_entries: int | None = None) -> bytes:
    """``zipped`` rewritten with a zip64 end record (claiming ``entries``; None: the true count) and its locator.

    With ``decoy_entries``, a second zip64 end record claiming that many is put at the start (zipfile
    takes it for a prefix, as of a self-extractor) and the locator points at it.
    """
    at = zipped.rfind(b"PK\x05\x06")
    _, _, _, _, count, size, offset, _ = struct.unpack("<4s4H2LH", zipped[at : at + 22])
    claimed = count if entries is None else entries
    directory_bytes = size if entries is None else entries * 46
    record = struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, claimed, claimed, directory_bytes, offset)
    prefix = b""
    record_offset = at
    if decoy_entries is not None:
        prefix = struct.pack(
            "<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, decoy_entries, decoy_entries, decoy_entries * 46, 0
        )
        record_offset = 0
    locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, record_offset, 1)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return prefix + zipped[:at] + record + locator + end


async def test_a_deflate_bomb_is_inflated_no_further_than_the_note_s_listed_size(tmp_path: Path) -> None:
    with loopback_server() as server:
        vault = Scripted(server, team_folder())
        bomb = deflate_bomb("team/people/n00.md", 64 << 20, declared=len(vault.notes["team/people/n00.md"]))

        def archive(folder: str) -> bytes:
            return merged(bomb, zip_of(list(vault.notes.items())[1:]))

        vault.archive_for = archive
        tracemalloc.start()
        try:
            _, _, result = await call_once(runner_for(server, tmp_path), "search_notes", query="needle")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert (result["totalNotes"], result["partial"]) == (10, False)
        assert vault.downloads() == ["team/people/n00.md"]  # its entry did not check out
        assert peak < 16 << 20, f"{peak:,} bytes held at once: the bomb's 64 MiB were inflated"


def deflate_bomb(name: str, size: int, *, declared: int) -> bytes:
    """A zip of one entry of ``size`` zero bytes whose headers say it is ``declared`` bytes long."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive, archive.open(name, "w") as entry:
        chunk = bytes(1 << 20)
        for _ in range(size >> 20):
            entry.write(chunk)
    data = bytearray(out.getvalue())
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = data.find(signature)
        struct.pack_into("<L", data, at + offset, declared)  # the uncompressed size, local and central
    return bytes(data)


def merged(first: bytes, second: bytes) -> bytes:
    """The entries of two zips in one."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for source in (first, second):
            with zipfile.ZipFile(io.BytesIO(source)) as archive:
                for info in archive.infolist():
                    raw = raw_entry(source, info)
                    target.fp.write(raw)  # type: ignore[union-attr]
                    copy = zipfile.ZipInfo(info.filename, info.date_time)
                    copy.compress_type, copy.CRC = info.compress_type, info.CRC
                    copy.compress_size, copy.file_size = info.compress_size, info.file_size
                    copy.header_offset = target.start_dir
                    target.start_dir += len(raw)
                    target.filelist.append(copy)
                    target.NameToInfo[copy.filename] = copy
    return out.getvalue()


def raw_entry(zipped: bytes, info: zipfile.ZipInfo) -> bytes:
    """The local header and data of an entry, as stored."""
    at = info.header_offset
    name_length, extra_length = struct.unpack("<2H", zipped[at + 26 : at + 30])
    return zipped[at : at + 30 + name_length + extra_length + info.compress_size]


async def test_an_archive_longer_than_the_folder_could_be_is_cut_off(tmp_path: Path) -> None:
    with loopback_server() as server:
        vault = Scripted(server, team_folder())
        sent: list[int] = []

        def endless(exchange: Exchange, folder: str) -> None:
            exchange.handler.send_response(200)
            exchange.handler.send_header("Content-Type", "application/zip")
            exchange.handler.send_header("Content-Length", str(1 << 30))
            exchange.handler.end_headers()
            chunk = bytes(64 * 1024)
            try:
                for count in itertools.count():
                    exchange.handler.wfile.write(chunk)
                    sent.append(count)
            except OSError:
                pass  # the client stopped reading and closed

        vault.archive_answer = endless
        _, _, result = await call_once(runner_for(server, tmp_path), "search_notes", query="needle")
        assert (result["totalNotes"], result["partial"]) == (10, False)
        assert vault.downloads() == sorted(vault.notes)
        assert len(sent) * 64 * 1024 < 8 << 20, "the client read far more than a 10-note folder could hold"


# -- a server without the route -----------------------------------------------------------------------------


async def test_without_the_route_notes_come_one_by_one_and_the_server_is_not_asked_again(tmp_path: Path) -> None:
    with LocalVault(tmp_path / "vault", folder_download=False) as vault:
        for number in range(10):
            seed(vault, f"a/n{number}.md", note(number))
            seed(vault, f"b/n{number}.md", note(number + 10))
        runner = runner_on(vault, cache_dir=tmp_path / "cache", call_budget=30.0, structured_content=True)
        _, _, result = await call_once(runner, "search_notes", query="needle")
        assert (result["totalNotes"], result["partial"]) == (20, False)
        assert runner.workspace.sync.route.present is False and runner.workspace.sync.route.probes == 1
        for number in range(10):
            seed(vault, f"c/n{number}.md", note(number + 20))
        before = len(vault.faults.seen)
        _, _, result = await call_once(runner, "search_notes", query="needle")
        assert (result["totalNotes"], result["partial"]) == (30, False)
        asked = [path for _, path in vault.faults.seen[before:]]
        assert not [path for path in asked if path.endswith("/folders/download")]
        assert len(asked) == 11  # the listing and the 10 new notes


async def test_a_next_js_404_page_on_the_route_is_an_unknown_route_once_a_probe_agrees(tmp_path: Path) -> None:
    with loopback_server() as server:
        vault = Scripted(server, team_folder())
        page = b"<!DOCTYPE html><html><head><title>404: This page could not be found</title></head></html>"
        vault.archive_answer = lambda exchange, folder: exchange.answer(404, page, "text/html; charset=utf-8")
        runner = runner_for(server, tmp_path)
        _, _, result = await call_once(runner, "search_notes", query="needle")
        assert (result["totalNotes"], result["partial"]) == (10, False)
        assert vault.archives() == ["team", ""]  # the archive, then the probe without a path
        assert runner.workspace.sync.route.present is False


async def test_a_404_for_a_folder_emptied_since_the_listing_is_not_taken_for_a_missing_route(tmp_path: Path) -> None:
    with loopback_server() as server:
        vault = Scripted(server, team_folder())
        empty = json.dumps({"error": {"code": "not_found", "message": "Папка пуста"}}).encode()

        def answer(exchange: Exchange, folder: str) -> None:
            if folder:
                exchange.answer(404, empty)
            else:
                exchange.answer(400, b'{"error":{"code":"missing_path","message":"no folder"}}')

        vault.archive_answer = answer
        runner = runner_for(server, tmp_path)
        _, _, result = await call_once(runner, "search_notes", query="needle")
        assert (result["totalNotes"], result["partial"]) == (10, False)
        assert runner.workspace.sync.route.present is True  # the probe said the route is there


async def test_a_405_on_the_route_means_the_server_has_none(tmp_path: Path) -> None:
    with loopback_server() as server:
        vault = Scripted(server, team_folder())
        vault.archive_answer = lambda exchange, folder: exchange.answer(
            405, b'{"error":{"code":"method_not_allowed","message":"no"}}'
        )
        runner = runner_for(server, tmp_path)
        _, _, result = await call_once(runner, "search_notes", query="needle")
        assert (result["totalNotes"], result["partial"]) == (10, False)
        assert vault.archives() == ["team"] and runner.workspace.sync.route.present is False


# -- cancels and budgets --------------------------------------------------------------------------------


@pytest.fixture
def two_folders(tmp_path: Path) -> Iterator[LocalVault]:
    with LocalVault(tmp_path / "vault") as vault:
        for number in range(10):
            seed(vault, f"a/n{number}.md", note(number))
            seed(vault, f"b/n{number}.md", note(number + 10))
        yield vault


async def test_a_cancel_during_an_archive_download_closes_its_socket_and_leaves_the_cache_whole(
    two_folders: LocalVault, tmp_path: Path
) -> None:
    vault = two_folders
    vault.faults.add("GET", ARCHIVE.replace(PROJECT, "*"), Fault.hang(at_most=60), times=2)
    runner = runner_on(vault, cache_dir=tmp_path / "cache", call_budget=45.0, structured_content=True)
    async with Client(build_server(runner), mode="legacy") as client:
        async with anyio.create_task_group() as group:

            async def search() -> None:
                await client.call_tool("search_notes", {"query": "needle"})

            group.start_soon(search)
            await await_until(lambda: len(vault.faults.injected) == 2, "both archives being held by the vault")
            group.cancel_scope.cancel()
        await await_until(lambda: len(vault.faults.hang_ended) == 2, "the vault seeing both archives dropped")
        await await_until(lambda: not runner.active_calls(), "the cancelled search ending")
    assert cache_entries(tmp_path) == set()  # nothing of an archive that never arrived
    index_files = {"changes", "index.sqlite", "index.sqlite-wal", "index.sqlite-shm", "index.lock"}  # empty ones
    assert not [path for path in (tmp_path / "cache").rglob("*") if path.is_file() and path.name not in index_files]
    _, _, result = await call_once(runner, "search_notes", query="needle")  # the next search has it all
    assert (result["totalNotes"], result["partial"]) == (20, False)


async def test_a_cancel_while_an_archive_streams_in_keeps_only_whole_checked_entries(
    two_folders: LocalVault, tmp_path: Path
) -> None:
    vault = two_folders
    vault.faults.add("GET", ARCHIVE.replace(PROJECT, "*"), Fault.drip(0.002), times=2)
    runner = runner_on(vault, cache_dir=tmp_path / "cache", call_budget=45.0, structured_content=True)
    updates: list[float] = []
    async with Client(build_server(runner), mode="legacy") as client:
        async with anyio.create_task_group() as group:

            async def search() -> None:
                await client.call_tool("search_notes", {"query": "needle"})
                updates.append(-1)

            group.start_soon(search)
            await await_until(lambda: len(vault.faults.injected) == 2, "both archives dripping")
            await anyio.sleep(0.2)  # some bytes of each are on their way in
            group.cancel_scope.cancel()
        await await_until(lambda: not runner.active_calls(), "the cancelled search ending")
    assert -1 not in updates  # it was cancelled mid-archive, not answered
    assert cache_entries(tmp_path) == set()
    _, _, result = await call_once(runner, "search_notes", query="needle")
    assert (result["totalNotes"], result["partial"]) == (20, False)
    assert cache_entries(tmp_path) == {digest(note(number)) for number in range(20)}


async def test_a_budget_that_ends_during_an_archive_gives_a_partial_answer_and_a_whole_cache(
    two_folders: LocalVault, tmp_path: Path
) -> None:
    vault = two_folders
    fast = threading.Event()
    fast.set()
    vault.faults.chooser = lambda method, path: (
        Fault.hang(at_most=60) if path.endswith("/folders/download") and fast.is_set() else None
    )
    runner = runner_on(vault, cache_dir=tmp_path / "cache", call_budget=3.5, structured_content=True)
    text, is_error, result = await call_once(runner, "search_notes", query="needle")
    fast.clear()
    assert not is_error
    assert result["partial"] is True and result["notesNotSearched"] == 20
    assert "the call's time budget ran out" in text
    assert cache_entries(tmp_path) == set()
    _, _, result = await call_once(
        runner_on(vault, cache_dir=tmp_path / "cache", call_budget=30.0, structured_content=True),
        "search_notes",
        query="needle",
    )
    assert (result["totalNotes"], result["partial"]) == (20, False)


# -- memory ------------------------------------------------------------------------------------------------


async def test_the_index_keeps_only_folded_text_when_the_disk_cache_has_the_raw(
    two_folders: LocalVault, tmp_path: Path
) -> None:
    cached = runner_on(two_folders, cache_dir=tmp_path / "cache", call_budget=30.0, structured_content=True)
    text, _, result = await call_once(cached, "search_notes", query="NEEDLE")
    assert result["totalNotes"] == 20 and "The needle is in note" in text  # hits show the raw text
    entries = [cached.workspace.index.get(digest(note(number))) for number in range(20)]
    assert all(entry is not None and entry.kept_raw is None for entry in entries)
    assert entries[0] is not None and entries[0].raw == note(0).decode()  # read back from the disk cache
    uncached = runner_on(two_folders, cache_dir=None, call_budget=30.0, structured_content=True)
    await call_once(uncached, "search_notes", query="needle")
    assert all(uncached.workspace.index.get(digest(note(number))).kept_raw is not None for number in range(20))  # type: ignore[union-attr]


def evict_everything(runner: ToolRunner, vault: LocalVault, tmp_path: Path) -> None:
    """What another process's evictions do: the disk cache has none of the notes the search index still names."""
    for path in (tmp_path / "cache").rglob("*"):
        if path.is_file() and len(path.name) == 64:
            path.unlink()
    runner.workspace.index.shown_chars = 0  # nothing recently shown either
    runner.workspace.index._shown.clear()
    root = runner.workspace.cache_for(vault.project_id)
    assert root is not None
    root.root._memory.clear()


async def test_hits_are_shown_even_when_another_process_evicted_the_note_from_the_cache(
    two_folders: LocalVault, tmp_path: Path
) -> None:
    runner = runner_on(two_folders, cache_dir=tmp_path / "cache", call_budget=30.0, structured_content=True)
    await call_once(runner, "search_notes", query="needle")
    evict_everything(runner, two_folders, tmp_path)
    text, _, result = await call_once(runner, "search_notes", query="needle", limit=3)
    assert len(result["hits"]) == 3 and "The needle is in note" in text


async def test_replace_in_notes_reads_again_the_notes_another_process_evicted_from_the_cache(
    two_folders: LocalVault, tmp_path: Path
) -> None:
    runner = runner_on(two_folders, cache_dir=tmp_path / "cache", call_budget=30.0, structured_content=True)
    await call_once(runner, "search_notes", query="needle")  # the index names every note, the cache has the text
    evict_everything(runner, two_folders, tmp_path)
    _, _, result = await call_once(runner, "replace_in_notes", find="needle", replace="pin")
    assert (len(result["notes"]), result["matches"], result["notesSearched"], result["partial"]) == (20, 20, 20, False)


async def test_replace_in_notes_counts_an_evicted_note_it_cannot_read_again_as_not_searched_and_applies_nothing(
    two_folders: LocalVault, tmp_path: Path
) -> None:
    runner = runner_on(two_folders, cache_dir=tmp_path / "cache", call_budget=30.0, structured_content=True)
    await call_once(runner, "search_notes", query="needle")
    evict_everything(runner, two_folders, tmp_path)
    two_folders.faults.add("GET", "/api/projects/*/files/*", Fault.answer(404), times=1)  # one note gone meanwhile
    text, _, result = await call_once(runner, "replace_in_notes", find="needle", replace="pin")
    assert (len(result["notes"]), result["partial"], result["notesNotSearched"]) == (19, True, 1), text
    assert "1 note could not be read (some notes could not be read again)" in text
    evict_everything(runner, two_folders, tmp_path)
    two_folders.faults.add("GET", "/api/projects/*/files/*", Fault.answer(404), times=1)  # and again for the apply
    text, is_error, result = await call_once(
        runner, "replace_in_notes", find="needle", replace="pin", dryRun=False, expectedCount=19
    )
    assert is_error and "Nothing was written" in text, text  # never a rename of only some notes
    assert result == {"error": {"message": text, "mayHaveBeenApplied": False}}
    assert not [e for e in two_folders.faults.seen if e[0] == "PUT"]


async def test_the_link_index_reads_again_the_notes_another_process_evicted_from_the_cache(
    two_folders: LocalVault, tmp_path: Path
) -> None:
    seed(two_folders, "c/tagged.md", b"# Tagged\n\nThe needle, #urgent.\n")
    runner = runner_on(two_folders, cache_dir=tmp_path / "cache", call_budget=30.0, structured_content=True)
    await call_once(runner, "search_notes", query="needle")  # in the search index; the link index has read none
    evict_everything(runner, two_folders, tmp_path)
    two_folders.faults.add("GET", "/api/projects/*/files/*", Fault.answer(404), times=1)  # one of them gone meanwhile
    text, _, result = await call_once(runner, "list_tags")
    assert result["partial"] is True and "some notes could not be read again" in text, text
    text, _, result = await call_once(runner, "list_tags")  # the next call reads it again, the rest from memory
    assert result["partial"] is False and "urgent" in text, text


def test_hashes_compare_as_the_listing_gives_them() -> None:
    assert digest(note(1)) == hashlib.sha256(note(1)).hexdigest()


# -- the cache's bound holds for archives on their way in -------------------------------------------------


async def test_archives_on_their_way_in_count_in_the_cache_s_bound(tmp_path: Path) -> None:
    # Four folders of ~390 KB, stored (not deflated): four temp files at once would be 1.5 MB under a
    # 1 MiB bound. Each archive stops short of its last chunk until the temp files are measured.
    bound = 1 << 20
    notes = {
        f"d{folder}/n{number}.md": note(number) + noise(folder * 100 + number, 36_000)
        for folder in range(4)
        for number in range(ARCHIVE_MIN_NOTES)
    }
    with loopback_server() as server:
        vault = Scripted(server, notes)
        cache = tmp_path / "cache"
        arrived: dict[str, int] = {}  # folder → bytes sent before the hold
        lock = threading.Lock()
        release = threading.Event()

        def held(exchange: Exchange, folder: str) -> None:
            body = stored_zip_of([(path, data) for path, data in notes.items() if path.startswith(folder + "/")])
            first = (len(body) - 1) // CHUNK * CHUNK  # whole chunks: each is in the temp file once it came
            exchange.handler.send_response(200)
            exchange.handler.send_header("Content-Type", "application/zip")
            exchange.handler.send_header("Content-Length", str(len(body)))
            exchange.handler.end_headers()
            exchange.handler.wfile.write(body[:first])
            exchange.handler.wfile.flush()
            with lock:
                arrived[folder] = first
            release.wait(GENEROUS)
            exchange.handler.wfile.write(body[first:])
            exchange.handler.wfile.flush()

        def every_archive_held_or_declined() -> bool:
            with lock:
                expected = sum(arrived.values())
                folders = set(arrived)
            declined = {path.partition("/")[0] for path in vault.downloads()}  # its notes come one by one
            return len(folders | declined) == 4 and spooled_bytes(cache) == expected

        vault.archive_answer = held
        runner = runner_for(server, tmp_path, cache_max_bytes=bound)
        results: list[Any] = []

        async def search() -> None:
            results.append(await call_once(runner, "search_notes", query="needle"))

        async with anyio.create_task_group() as group:
            group.start_soon(search)
            try:
                await await_until(every_archive_held_or_declined, "the archives' first bytes reaching the disk")
                peak = spooled_bytes(cache) + sum(map(size_if_there, entry_files(cache)))
            finally:
                release.set()
        assert peak <= bound, f"{peak:,} bytes under the cache during {len(arrived)} archives; its bound is {bound:,}"
        _, _, result = results[0]
        assert (result["totalNotes"], result["partial"]) == (len(notes), False)


CHUNK = 64 * 1024  # what the transport writes to a temp file at a time


def size_if_there(path: Path) -> int:
    """A cache entry's size, or 0 when it was evicted between the listing and the look (the notes that come one
    by one are stored and evicted meanwhile)."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def noise(seed: int, size: int) -> bytes:
    """Text that does not compress: ``size`` random bytes in base64."""
    return base64.b64encode(random.Random(seed).randbytes(size))


def stored_zip_of(entries: list[tuple[str, bytes]]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        for name, data in entries:
            archive.writestr(name, data)
    return out.getvalue()


def entry_files(cache: Path) -> list[Path]:
    return [path for path in cache.rglob("*") if path.is_file() and len(path.name) == 64]


def spooled_bytes(cache: Path) -> int:
    """Bytes of the unnamed temp files under ``cache`` this process holds open (the archives on their way in)."""
    total = 0
    for handle in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{handle}")
            name = target.rpartition("/")[2]
            if target.startswith(f"{cache}/") and target.endswith(" (deleted)") and name.startswith(("#", ".incoming")):
                total += os.stat(f"/proc/self/fd/{handle}").st_size
    return total


def test_a_budget_that_ends_while_an_archive_is_read_keeps_what_was_read_and_queues_the_rest_as_one_archive(
    tmp_path: Path,
) -> None:
    """A folder of thousands of notes takes longer to take in than a call has: the reading stops between batches
    when the budget says so (it went on to the end, and the call overran its budget at 100,000 notes); the notes
    read are kept, and the rest stays queued as the folder's archive, not as thousands of single downloads."""
    count = CACHE_BATCH * 2 + 10
    with loopback_server() as server:
        vault = Scripted(server, team_folder(count))
        runner = runner_for(server, tmp_path)
        try:
            client = runner.workspace.client(Budget(30.0, SystemClock()), CancelToken())
            listing = client.list_files(PROJECT)
            kept: list[str] = []
            sync = VaultSync().project(PROJECT, None, lambda content_hash, data, cached: kept.append(content_hash))
            asked = itertools.count()
            stopped, settled = sync.fetch(
                client,
                listing,
                listing,
                workers=1,
                keep_going=lambda: "its time ran out" if next(asked) >= 1 else None,  # after the first batch
                archive_seconds=lambda: 30.0,
            )
            assert stopped == "its time ran out"
            assert len(settled) == len(kept) == CACHE_BATCH
            assert sync.pending() == count - CACHE_BATCH
            rest = [file for file in listing if file.content_hash not in kept]  # what a caller still lacks
            stopped, settled = sync.fetch(
                client, listing, rest, workers=1, keep_going=lambda: None, archive_seconds=lambda: 30.0
            )
            assert (stopped, len(settled), len(set(kept))) == (None, count - CACHE_BATCH, count)
            assert vault.archives() == ["team", "team"] and vault.downloads() == []
            client.close()
        finally:
            runner.close()
