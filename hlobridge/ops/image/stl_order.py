"""libstdc++'s std::priority_queue and std::sort, step for step, for kernels whose tie order is
whatever TensorFlow's C++ containers happen to produce.

CombinedNonMaxSuppression (non_max_suppression_op.cc) queues candidates by score alone and sorts
its results with std::sort by score alone: among equal scores, which box comes first is decided
by the heap's sift order and by introsort's partitioning, not by any stated rule. TensorFlow's
Linux builds use libstdc++ (bits/stl_heap.h, bits/stl_algo.h); these are its algorithms,
transcribed, so the kernel returns TensorFlow's boxes even on ties. `less(a, b)` is the C++
comparator ("a goes after b" for a max-heap).
"""

from __future__ import annotations

from typing import Callable

_THRESHOLD = 16  # libstdc++'s _S_threshold: ranges up to this size are insertion-sorted


# -- bits/stl_heap.h ------------------------------------------------------------------------------

def _push_heap(v: list, first: int, hole: int, top: int, value, less: Callable) -> None:
    """__push_heap on the heap at v[first:], hole and top relative to first."""
    parent = (hole - 1) // 2
    while hole > top and less(v[first + parent], value):
        v[first + hole] = v[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    v[first + hole] = value


def _adjust_heap(v: list, first: int, hole: int, length: int, value, less: Callable) -> None:
    """__adjust_heap on v[first:first + length], hole relative to first."""
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if less(v[first + child], v[first + child - 1]):
            child -= 1
        v[first + hole] = v[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        v[first + hole] = v[first + child - 1]
        hole = child - 1
    _push_heap(v, first, hole, top, value, less)


def _pop_heap(v: list, first: int, last: int, less: Callable) -> None:
    """std::pop_heap of v[first:last]: the top moves to last - 1."""
    if last - first > 1:
        last -= 1
        value = v[last]
        v[last] = v[first]
        _adjust_heap(v, first, 0, last - first, value, less)


def _make_heap(v: list, first: int, last: int, less: Callable) -> None:
    length = last - first
    if length < 2:
        return
    parent = (length - 2) // 2
    while True:
        _adjust_heap(v, first, parent, length, v[first + parent], less)
        if parent == 0:
            return
        parent -= 1


class PriorityQueue:
    """std::priority_queue<T, std::vector<T>, less>: push/top/pop as libstdc++ does them."""

    def __init__(self, less: Callable):
        self.less = less
        self.items: list = []

    def push(self, item) -> None:
        self.items.append(item)
        _push_heap(self.items, 0, len(self.items) - 1, 0, item, self.less)

    def top(self):
        return self.items[0]

    def pop(self):
        top = self.items[0]
        _pop_heap(self.items, 0, len(self.items), self.less)
        self.items.pop()
        return top

    def __len__(self) -> int:
        return len(self.items)


# -- bits/stl_algo.h: std::sort (introsort, then a final insertion sort) -------------------------

def _unguarded_linear_insert(v: list, last: int, less: Callable) -> None:
    value = v[last]
    nxt = last - 1
    while less(value, v[nxt]):
        v[last] = v[nxt]
        last = nxt
        nxt -= 1
    v[last] = value


def _insertion_sort(v: list, first: int, last: int, less: Callable) -> None:
    for i in range(first + 1, last):
        if less(v[i], v[first]):
            value = v[i]
            v[first + 1:i + 1] = v[first:i]
            v[first] = value
        else:
            _unguarded_linear_insert(v, i, less)


def _move_median_to_first(v: list, result: int, a: int, b: int, c: int, less: Callable) -> None:
    """The median of v[a], v[b], v[c] swapped into v[result], as libstdc++ picks it."""
    if less(v[a], v[b]):
        pick = b if less(v[b], v[c]) else (c if less(v[a], v[c]) else a)
    else:
        pick = a if less(v[a], v[c]) else (c if less(v[b], v[c]) else b)
    v[result], v[pick] = v[pick], v[result]


def _unguarded_partition(v: list, first: int, last: int, pivot: int, less: Callable) -> int:
    while True:
        while less(v[first], v[pivot]):
            first += 1
        last -= 1
        while less(v[pivot], v[last]):
            last -= 1
        if not first < last:
            return first
        v[first], v[last] = v[last], v[first]
        first += 1


def _introsort_loop(v: list, first: int, last: int, depth: int, less: Callable) -> None:
    while last - first > _THRESHOLD:
        if depth == 0:  # std::partial_sort(first, last, last): heap sort
            _make_heap(v, first, last, less)
            while last - first > 1:
                last -= 1
                _pop_heap(v, first, last + 1, less)
            return
        depth -= 1
        mid = first + (last - first) // 2
        _move_median_to_first(v, first, first + 1, mid, last - 1, less)
        cut = _unguarded_partition(v, first + 1, last, first, less)
        _introsort_loop(v, cut, last, depth, less)
        last = cut


def std_sort(items: list, less: Callable) -> list:
    """std::sort(items.begin(), items.end(), less), in place; returns items."""
    n = len(items)
    if n < 2:
        return items
    _introsort_loop(items, 0, n, 2 * (n.bit_length() - 1), less)
    if n > _THRESHOLD:
        _insertion_sort(items, 0, _THRESHOLD, less)
        for i in range(_THRESHOLD, n):
            _unguarded_linear_insert(items, i, less)
    else:
        _insertion_sort(items, 0, n, less)
    return items
