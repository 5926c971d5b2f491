"""Greedy search over many batches whose tails are decoded together.

A batch of sentences sorted by length still ends in a tail: a few long sentences run on for many steps after the rest
have finished, and a step of few rows costs nearly what a step of many does (every product, norm and attention is a
call of its own whatever the rows). [`TailPool`] takes such a tail out of its batch once fewer than `tail_rows` rows
run (`park`): their caches, source and history move to memory of the pool's, and the thread goes on with its next
batch. `finish` then decodes the parked tails of several batches as one batch: from the earliest position parked on,
every tail joins the rows at its own position, where its history is as long as theirs, so that no row attends over
another's longer history; sources of different lengths are padded and masked. The tokens are those each batch gives
alone up to float rounding (a row's padded source and its batch mates change no score; an int8 session's dynamic
quantization scales a step's rows together, as batching does anyway).

[`generate_batches`] is a session's greedy search (and beam search, which it runs batch by batch) over many batches in
one or several decoding streams, each with a pool of its own: `FastDecoder.generate_batches`, which `zhen.translate`
decodes with.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sized

import torch
import torch.nn.functional as F

from .search import worth_dropping


TAIL_SHARE = 0.25  # a batch's rows under this share of its rows are its tail
POOLED_BATCHES = 1  # the pool decodes its tails once they have as many rows as this many batches
UNPOOLED_LAST_BATCHES = 1  # a stream's last batches (of several streams') decoded batch by batch


class Parked:
    """Running rows of one or more batches in memory of their own, all with the same history length: their decoder
    `steps`, each row's output `(sequences, row)` and its last allowed length (`limits`), and the next step's length
    `cur_len` (the cache holds `cur_len - 1` positions)."""

    def __init__(self, steps, owners: list[tuple[torch.Tensor, int]], limits: torch.Tensor,
                 cur_len: int, slot: int):  # fmt: skip
        self.steps, self.owners, self.limits, self.cur_len, self.slot = steps, owners, limits, cur_len, slot

    @property
    def rows(self) -> int:
        return len(self.owners)


class TailPool:
    """The parked tails of one decoding stream's greedy batches ([module docstring](#zhen.pooled_tails)).

    Args:
        layer_steps: the session's layers' program for steps of `rows` rows (`FastDecoder.layer_steps`), or None
            where the layers' forwards run.
        eos, pad, forced_eos: as greedy search has them.
        tail_rows: a batch parks its rows once fewer than this many run; by default a quarter of its rows.
    """

    def __init__(self, model, layer_steps: Callable[[int], object], eos: int, pad: int, forced_eos: int | None,
                 tail_rows: int | None = None):  # fmt: skip
        self.model, self.layer_steps = model, layer_steps
        self.eos, self.pad, self.forced_eos = eos, pad, forced_eos
        self.tail_rows = tail_rows
        self.parked: list[Parked] = []
        self.workspaces: list = []  # one per parked group, kept for the next batches
        self.free: list[int] = []
        self.batch_rows = 0
        self.lengths: dict[int, list] = {}  # id(sequences): [sequences, the length its rows have written]

    @property
    def rows(self) -> int:
        return sum(group.rows for group in self.parked)

    def clear(self):
        """Forget every parked row (an interrupted call's), keeping the memory."""
        self.parked, self.lengths, self.batch_rows = [], {}, 0
        self.free = list(range(len(self.workspaces)))

    def full(self) -> bool:
        """Whether the parked rows would make a batch of their own: time to `finish` them."""
        return self.rows >= POOLED_BATCHES * self.batch_rows

    def takes(self, running: int, rows: int, cur_len: int, max_length: int, min_new_tokens: int) -> bool:
        """Whether a batch of `rows` rows, `running` of them unfinished after step `cur_len`, parks them now."""
        tail = self.tail_rows if self.tail_rows is not None else max(1, int(TAIL_SHARE * rows))
        return running < tail and cur_len + 1 < max_length and cur_len >= min_new_tokens

    def park(self, steps, sequences: torch.Tensor, active: torch.Tensor, cur_len: int,
             max_length: int):  # fmt: skip
        """Take the rows `active` of `sequences` (all unfinished; `steps` runs exactly them) out of their batch after
        step `cur_len`: the cache holds `cur_len` positions."""
        self.batch_rows = max(self.batch_rows, len(sequences))
        self.lengths[id(sequences)] = [sequences, cur_len + 1]
        owners = [(sequences, row) for row in active.tolist()]
        limits = torch.full((len(owners),), max_length, dtype=torch.long, device=sequences.device)
        slot = self.slot(steps)
        parked = Parked(self.joined([steps], cur_len, slot), owners, limits, cur_len + 1, slot)
        self.parked.append(parked)

    def slot(self, steps) -> int:
        """A parked group's memory: a workspace of the pool's, of the kind `steps` keeps its memory in."""
        if self.free:
            return self.free.pop()
        self.workspaces.append(type(steps.cache.workspace)())
        return len(self.workspaces) - 1

    def joined(self, groups: list, length: int, slot: int):
        """One batch of the rows of `groups` (decoder steps whose rows all run, each with `length` positions in its
        cache), in the memory of `slot`: sources padded to the longest, each row's history copied."""
        first = groups[0]
        sources = max(group.source_bias.shape[-1] for group in groups)
        max_length = max(group.cache.max_length for group in groups)
        source_keys_values = [
            tuple(
                torch.cat(
                    [
                        F.pad(getattr(group.cache.layers[i], name), (0, 0, 0, sources - group.source_bias.shape[-1]))
                        for group in groups
                    ]
                )  # fmt: skip
                for name in ("keys", "values")
            )
            for i in range(len(first.cache.layers))
        ]
        attention_mask = torch.cat(
            [F.pad(group.source_bias[:, 0, 0] == 0, (0, sources - group.source_bias.shape[-1])) for group in groups]
        )
        rows = len(attention_mask)
        dtype = first.cache.layers[0].values.dtype
        layer_steps = None if first.layer_steps is None else self.layer_steps(rows)
        steps = type(first)(self.model, None, attention_mask, 1, max_length, dtype, self.workspaces[slot],
                                layer_steps, source_keys_values)  # fmt: skip
        keys = first.cache.keys[0]
        steps.cache.allocate_layers(keys.shape[1], keys.shape[-1], keys.dtype, keys.device)
        for i in range(len(first.cache.keys)):
            at = 0
            for group in groups:
                steps.cache.keys[i][at : at + group.rows, :, :length] = group.cache.keys[i][:, :, :length]
                steps.cache.values[i][at : at + group.rows, :, :length] = group.cache.values[i][:, :, :length]
                at += group.rows
        return steps

    @torch.inference_mode()
    def finish(self) -> dict[int, torch.Tensor]:
        """Decode every parked row to its end; returns each output tensor they wrote to (by `id`), cut to the length
        `generate` gives its batch."""
        while self.parked:
            self.decode_from(self.take_earliest())
        finished = {key: sequences[:, :length] for key, (sequences, length) in self.lengths.items()}
        self.lengths.clear()
        return finished

    def take_earliest(self) -> Parked:
        """The groups parked at the earliest step, as one."""
        cur_len = min(group.cur_len for group in self.parked)
        now = [group for group in self.parked if group.cur_len == cur_len]
        self.parked = [group for group in self.parked if group.cur_len != cur_len]
        if len(now) == 1:
            return now[0]
        slot = self.slot(now[0].steps)
        steps = self.joined([group.steps for group in now], cur_len - 1, slot)
        self.free += [group.slot for group in now]
        owners = [owner for group in now for owner in group.owners]
        return Parked(steps, owners, torch.cat([group.limits for group in now]), cur_len, slot)

    def decode_from(self, group: Parked):
        """Greedy steps of `group` until its rows finish, or reach the step where other groups are parked (then it
        joins them). The tokens go to the rows' outputs whenever the rows change ([`write`])."""
        steps, owners, limits, cur_len = group.steps, group.owners, group.limits, group.cur_len
        tokens = torch.stack([sequences[row, cur_len - 1] for sequences, row in owners])
        unfinished = torch.ones(len(owners), dtype=torch.bool, device=steps.device)
        columns, start = [], cur_len
        last = torch.full((len(owners),), -1, dtype=torch.long, device=steps.device)  # each row's last token's step
        while True:
            hidden_states = steps.step(tokens, cur_len - 1)
            tokens = torch.where(unfinished, steps.next_tokens(hidden_states), self.pad)
            if self.forced_eos is not None:
                tokens = torch.where(unfinished & (limits - 1 == cur_len), self.forced_eos, tokens)
            columns.append(tokens)
            last.masked_fill_(unfinished, cur_len)
            unfinished &= (tokens != self.eos) & (cur_len + 1 < limits)
            cur_len += 1
            running = int(unfinished.sum())
            if running == 0:
                self.write(owners, columns, start, last)
                self.free.append(group.slot)
                return
            meets = any(other.cur_len == cur_len for other in self.parked)
            if meets or worth_dropping(len(owners) - running, len(owners)):
                self.write(owners, columns, start, last)
                columns, start = [], cur_len
                kept = unfinished.nonzero().view(-1)
                steps.keep(kept, cur_len - 1)
                owners = [owners[i] for i in kept.tolist()]
                limits, tokens, unfinished, last = limits[kept], tokens[kept], unfinished[kept], last[kept]
            if meets:
                self.parked.append(Parked(steps, owners, limits, cur_len, group.slot))
                return

    def write(self, owners: list[tuple[torch.Tensor, int]], columns: list[torch.Tensor], start: int,
              last: torch.Tensor):  # fmt: skip
        """Write the tokens of `columns` (one a step, from step `start` on) to the owners' output rows, within each
        output's width, and lengthen each output to its rows' `last` token."""
        if not columns:
            return
        block = torch.stack(columns, 1)
        for sequences, rows, among in self.writes(owners):
            width = min(block.shape[1], sequences.shape[1] - start)
            if width > 0:
                sequences[rows, start : start + width] = block[among, :width]
            end = int(last[among].max())
            if end >= 0:
                length = self.lengths[id(sequences)]
                length[1] = max(length[1], end + 1)

    @staticmethod
    def writes(owners: list[tuple[torch.Tensor, int]]) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        """Per output tensor among `owners`: its rows, and where they are among the owners."""
        found: dict[int, tuple[torch.Tensor, list, list]] = {}
        for i, (sequences, row) in enumerate(owners):
            found.setdefault(id(sequences), (sequences, [], []))
            found[id(sequences)][1].append(row)
            found[id(sequences)][2].append(i)
        device = owners[0][0].device
        return [
            (sequences, torch.tensor(rows, device=device), torch.tensor(among, device=device))
            for sequences, rows, among in found.values()
        ]


def generate_batches(session, batches: Iterable[dict], streams: int = 1) -> Iterator[torch.Tensor]:
    """`session.generate(**batch)` for each of `batches`, in order, in `streams` threads taking the batches in turn
    (each with its share of PyTorch's threads, as [`zhen.fast_generation.in_streams`]); each thread's greedy batches
    park their tails in a [`TailPool`] of its own, decoded together once they would fill a batch or the batches run
    out. Where several streams know how many batches are left, each decodes its pool before the last
    `UNPOOLED_LAST_BATCHES` a stream, which it decodes batch by batch: a pool's tails end late, and a stream left
    decoding them alone would leave the other cores idle. `batches` is read by one thread at a time. An error in a
    stream reaches the caller and stops the others."""
    total = len(batches) if isinstance(batches, Sized) else None
    if total is not None:
        streams = min(streams, total)
    source = enumerate(batches)
    if streams <= 1:
        for finished in _decode_stream(session, source):
            for _, output in finished:
                yield output
        return
    yield from _in_threads(session, source, streams, total)


def _decode_stream(session, source: Iterator, stop: threading.Event | None = None,
                   closing: Callable[[], bool] | None = None) -> Iterator[list]:  # fmt: skip
    """Decode `source`'s `(index, batch)` in this thread; yields lists of `(index, output)` as they are final, in
    the order taken. Once `closing()` says so, the pool is decoded and the batches taken after decode alone."""
    pool, waiting, started = None, [], False
    for index, batch in source:
        if stop is not None and stop.is_set():
            return
        if not started:
            pool, started = session.tail_pool(), True
        if pool is not None and closing is not None and closing():
            if waiting:
                yield _finished(pool, waiting)
                waiting = []
            pool = None
        waiting.append((index, session.generate(**batch, tail_pool=pool)))
        if pool is None or not pool.parked or pool.full():
            yield _finished(pool, waiting)
            waiting = []
    if waiting:
        yield _finished(pool, waiting)


def _finished(pool: TailPool | None, waiting: list) -> list:
    cut = pool.finish() if pool is not None and pool.parked else {}
    return [(index, cut.get(id(output), output)) for index, output in waiting]


def _in_threads(session, source: Iterator, streams: int, total: int | None) -> Iterator[torch.Tensor]:
    """[`_decode_stream`] in `streams` threads taking `source`'s `total` batches (None: unknown) in turn; the outputs
    in index order."""
    threads = max(1, torch.get_num_threads() // streams)
    lock, ready, stop = threading.Lock(), threading.Condition(), threading.Event()
    done: dict[int, torch.Tensor] = {}
    errors: list[BaseException] = []
    running, taken = [streams], [0]

    def take():
        with lock:
            taken[0] += 1
            return next(source, None)

    def closing() -> bool:
        return total is not None and total - taken[0] < UNPOOLED_LAST_BATCHES * streams

    def worker():
        try:
            torch.set_num_threads(threads)  # this worker thread's own setting
            for finished in _decode_stream(session, iter(take, None), stop, closing):
                with ready:
                    done.update(finished)
                    ready.notify_all()
        except BaseException as error:  # reaches the caller
            errors.append(error)
            stop.set()
        finally:
            with ready:
                running[0] -= 1
                ready.notify_all()

    workers = [threading.Thread(target=worker, name=f"zhen-decoding-{i}", daemon=True) for i in range(streams)]
    for thread in workers:
        thread.start()
    try:
        index = 0
        while True:
            with ready:
                while index not in done and not errors and running[0]:
                    ready.wait()
                if errors:
                    raise errors[0]
                if index not in done:
                    return
                output = done.pop(index)
            yield output
            index += 1
    finally:
        stop.set()
        for thread in workers:
            thread.join()
