"""Take deleted elements out of an hnswlib state: their vectors and every link to or
from them (an erase must leave neither an erased memory's vector in a checkpoint nor
its place among its neighbours).

hnswlib's ``mark_deleted`` only sets a flag: the element keeps its vector and its links,
and searches route through it. ``HnswIndex.scrub`` copies the state out, scrubs it here
and loads it back, so the index in memory and every later checkpoint hold no trace:

- a deleted element's vector is zeroed, its level-0 list emptied (the count goes to
  0; the deleted mark beside the count stays) and its upper-level lists removed (it
  is put on level 0);
- every list that linked to it loses that link (the others keep their order);
- the unused tail of every list (hnswlib never reads past the count, and leaves old
  neighbours there) is zeroed;
- if the entry point was deleted, the live element with the highest level (then the
  lowest internal id) becomes the entry point and sets the top level (with none
  left, the old one stays, on level 0).

The label stays in the label maps and in the deleted list (counts survive a reload,
and a later insert under the same label reuses the slot: hnswlib then rewrites its
vector and relinks it). The graph has lost the routes through scrubbed elements, like
a graph whose deleted nodes were removed without repair: with a small share of them
recall does not move (tests/sidecar/test_hnsw_scrub.py), and a rebuild compacts the graph.

Layout (hnswlib 0.8, checked by ``hnsw._check_state`` before anything reads it): each
element's level-0 block in ``data_level0`` is a uint32 header (count in the low 16 bits,
the deleted mark in bit 16), ``max_M0`` uint32 links, the vector, the label; each
element of level L > 0 owns L blocks in ``link_lists`` (in internal-id order) of a
uint32 header and ``max_M`` links.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

_COUNT = np.uint32(0xFFFF)


def scrub(state: dict[str, Any], deleted: npt.NDArray[np.uint64], dim: int) -> None:
    """Scrub the elements labelled ``deleted`` out of ``state`` in place (its arrays
    must be writable copies: hnswlib's ``__getstate__`` returns fresh ones)."""
    cur = int(state["cur_element_count"])
    if cur == 0 or not len(deleted):
        return
    external = np.asarray(state["label_lookup_external"])
    internal = np.asarray(state["label_lookup_internal"])
    gone = np.sort(internal[np.isin(external, deleted)].astype(np.int64))
    per, off = int(state["size_data_per_element"]), int(state["offset_data"])
    level0 = np.asarray(state["data_level0"])[: cur * per].reshape(cur, per)
    level0[gone, off : off + 4 * dim] = 0  # the vectors
    # Level 0: the header and max_M0 links of each element, as uint32 (a view).
    links0 = level0[:, :off].view(np.uint32)
    _unlink(links0, gone, np.isin(np.arange(cur), gone))
    # Upper levels: drop the links to deleted elements, then their own blocks, and put
    # them on level 0 (the blocks are laid out by level: both change together).
    all_levels = np.asarray(state["element_levels"])
    levels = all_levels[:cur].astype(np.int64)
    upper = np.asarray(state["link_lists"])
    if len(upper):
        blocks = upper.view(np.uint32).reshape(-1, 1 + int(state["max_M"]))
        owner = np.repeat(np.arange(cur), np.maximum(levels, 0))
        mine = np.isin(owner, gone)
        _unlink(blocks, gone, mine)
        state["link_lists"] = np.ascontiguousarray(blocks[~mine]).reshape(-1).view(np.int8)
    all_levels[gone] = 0
    levels[gone] = 0
    ep = int(state["enterpoint_node"])
    if ep in set(gone.tolist()):
        live = np.ones(cur, dtype=bool)
        live[gone] = False
        if live.any():
            candidates = np.flatnonzero(live)
            ep = int(candidates[np.argmax(levels[candidates])])  # first of the highest
        state["enterpoint_node"] = ep
        state["max_level"] = int(levels[ep])


def _unlink(lists: npt.NDArray[np.uint32], gone: npt.NDArray[np.int64], own: Any) -> None:
    """On ``lists`` (rows: header, links): empty the rows of deleted owners (``own``),
    drop links to ``gone`` from the others, keeping their order, and zero every row's
    unused tail."""
    header = lists[:, 0]
    links = lists[:, 1:]
    count = (header & _COUNT).astype(np.int64)
    count[own] = 0
    used = np.arange(links.shape[1]) < count[:, None]
    keep = used & ~np.isin(links, gone)
    changed = np.flatnonzero((keep != used).any(axis=1))
    if len(changed):
        rows = links[changed]
        order = np.argsort(~keep[changed], axis=1, kind="stable")  # kept links first
        links[changed] = np.take_along_axis(rows, order, axis=1)
        count[changed] = keep[changed].sum(axis=1)
        used = np.arange(links.shape[1]) < count[:, None]
    links[~used] = 0
    lists[:, 0] = (header & ~_COUNT) | count.astype(np.uint32)


__all__ = ["scrub"]
