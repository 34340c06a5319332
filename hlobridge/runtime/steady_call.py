"""The steady state of `Session.run`: a call with the same fetches and the same feeds (names,
dtypes, shapes) as an earlier one skips resolving them again.

Resolving a call (flattening the fetches, parsing each feed's name, finding its placeholder,
turning the value into an array of the placeholder's dtype and checking its shape, keying
the plan) is most of what a warm run of a small graph costs in Python (benchmarks/
call_overhead.py). A `SteadyCall` remembers what one (fetches, feed names) resolved to, and
takes the next call's feeds as they are when each is a C-contiguous NumPy array of the dtype
and shape that last time passed resolution unchanged: exactly the values `feeds.feed_array`
would hand back as they are. Anything else (a list, another dtype or shape, strings) is
resolved in full, as before, and becomes the remembered signature.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def steady_key(fetches, feed_dict) -> tuple | None:
    """The key of a call whose fetches are a name or a flat list/tuple of names (None: other
    structures resolve every call)."""
    if isinstance(fetches, str):
        fetch = fetches
    elif type(fetches) in (list, tuple) and all(isinstance(f, str) for f in fetches):
        fetch = (type(fetches), *fetches)
    else:
        return None
    if feed_dict is None:
        return fetch, ()
    return (fetch, tuple(feed_dict)) if isinstance(feed_dict, dict) else None


@dataclass
class SteadyCall:
    """What one (fetches, feed names) resolved to, and the feed values it takes as they are."""

    structure: object  # the fetches' structure (session._flatten)
    plan: object  # runtime.plan.Plan
    refs: tuple  # the TensorRef of each feed, in the feed_dict's order
    wants: tuple  # (dtype, shape) of each feed that resolution took as it was

    @classmethod
    def of(cls, structure, feed_dict, feeds: dict, plan) -> SteadyCall | None:
        """The steady call of a resolved call, or None where a feed was converted (its next
        value must be converted too) or two names fed one tensor."""
        values = list((feed_dict or {}).values())
        if len(feeds) != len(values) or any(v is not f for v, f in zip(values, feeds.values())):
            return None
        return cls(structure, plan, tuple(feeds), tuple((v.dtype, v.shape) for v in values))

    def feeds(self, feed_dict) -> dict | None:
        """The resolved feeds of this call's `feed_dict`, or None where one needs resolving."""
        if not self.refs:
            return {}
        resolved = {}
        for value, ref, (dtype, shape) in zip(feed_dict.values(), self.refs, self.wants):
            if type(value) is not np.ndarray or value.dtype != dtype or value.shape != shape \
                    or not value.flags.c_contiguous:
                return None
            resolved[ref] = value
        return resolved
