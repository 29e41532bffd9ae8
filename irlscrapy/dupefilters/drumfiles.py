"""The files of a DRUM's generations, and the checks that they are whole.

A generation's journal (``journal-<G>.rec``) takes batches until the generation is
closed: by a merge, or by the end of the run that wrote it (a restart starts a new
generation). Once closed it never changes until it is deleted, acknowledged, so its
length is recorded in the DRUM's LevelDB (``b"G" G -> u64``): at the merge that closes
it, or at the first open after the run that wrote it (whose torn tail, if a kill -9
left one, is cut first: the batch in it had not been submitted). On every open:

- the journals' numbers are a run without gaps (acknowledgement deletes the oldest
  first, so a gap is a file lost);
- a closed journal holds exactly its recorded length of whole records;
- the bucket files of a generation whose partition is marked complete hold all its
  tuples (they are derived data: short ones are rebuilt from the journal);
- the results file of a generation being merged, or merged and not yet delivered,
  has a slot for every tuple.

Anything else is :class:`~irlscrapy.exceptions.DamagedState`, naming the file.
"""

from __future__ import annotations

import itertools
import shutil
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from irlscrapy.dupefilters import drumjournal
from irlscrapy.exceptions import DamagedState
from irlscrapy.recordfile import repair, scan

_U64 = struct.Struct(">Q")


@dataclass
class Generation:
    tuples: int = 0
    last_seq: int = 0


def journal_path(directory: Path, gen: int) -> Path:
    return directory / f"journal-{gen}.rec"


def results_path(directory: Path, gen: int) -> Path:
    return directory / f"results-{gen}.bin"


def buckets_dir(directory: Path, gen: int) -> Path:
    return directory / f"buckets-{gen}"


def closed_key(gen: int) -> bytes:
    """The LevelDB key of a closed generation's journal length."""
    return b"G" + _U64.pack(gen)


def journal_generations(directory: Path) -> list[int]:
    """The generations with a journal, in order; DamagedState if one in their run is
    missing."""
    gens = sorted(
        int(stem)
        for p in directory.glob("journal-*.rec")
        if (stem := p.stem.removeprefix("journal-")).isdigit()
    )
    for before, after in itertools.pairwise(gens):
        if after != before + 1:
            raise DamagedState(
                journal_path(directory, before + 1),
                f"missing: the journals run from {gens[0]} to {gens[-1]}, and the URLs "
                "submitted in the missing ones would be lost",
            )
    return gens


def payloads(directory: Path, gen: int) -> Iterator[bytes]:
    """A closed generation's batches."""
    for _, payload in scan(journal_path(directory, gen), whole=True):
        yield payload


def read_generation(db: Any, directory: Path, gen: int) -> Generation:
    """Count a journal's tuples, checking it against its recorded length; record the
    length of one closed by the end of its run (cutting its torn tail first)."""
    path = journal_path(directory, gen)
    recorded = db.get(closed_key(gen))
    if recorded is not None:
        length, size = _U64.unpack(recorded)[0], path.stat().st_size
        if size != length:
            raise DamagedState(
                path,
                f"{size} bytes, but it held {length} when its generation closed"
                + (": the URLs of the batches cut off would be lost" if size < length else ""),
            )
    summary = Generation()
    for _, payload in scan(path, whole=recorded is not None):
        seq, n = drumjournal.peek(payload)
        summary.tuples += n
        summary.last_seq = seq
    if recorded is None:
        db.put(closed_key(gen), _U64.pack(repair(path)))
    return summary


def check_buckets(db: Any, directory: Path, gen: int, tuples: int, record_size: int) -> bool:
    """Are generation ``gen``'s bucket files whole, if its partition is marked complete?
    If not, they are removed with the mark (rebuilt from the journal by the merge);
    False then."""
    mark = b"P" + _U64.pack(gen)
    if db.get(mark) is None:
        return True
    folder = buckets_dir(directory, gen)
    held = sum(p.stat().st_size for p in folder.glob("*.bin")) if folder.is_dir() else -1
    if held == tuples * record_size:
        return True
    shutil.rmtree(folder, ignore_errors=True)
    db.delete(mark)
    return False


def check_results(directory: Path, gen: int, tuples: int, slot_size: int) -> None:
    """A generation being merged or awaiting delivery has a slot for each tuple."""
    path = results_path(directory, gen)
    size = path.stat().st_size if path.exists() else None
    if size != tuples * slot_size:
        what = "missing" if size is None else f"{size} bytes"
        raise DamagedState(
            path,
            f"{what}, but its generation's {tuples} URLs need {tuples * slot_size}: whether "
            "each was new is lost",
        )
