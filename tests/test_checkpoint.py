"""Checkpoint: a lazy, read-only resume point that behaves like the plain value it replaced.

The session builds checkpoints with ``Checkpoint._at(file, pos, gtids, state)``
and reads ``position``/``gtid_state`` only when asked; callers build them with
``Checkpoint(FilePos(...), Gtid(...))``. Both must give the same values,
equality, hashes and repr as a frozen dataclass of ``position`` and
``gtid_state`` (``_Reference`` below), whichever was read first. Pure Python:
this runs with and without the compiled accelerator.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replica_client.position import FilePos, Gtid, GtidTriple
from replica_client.session import Checkpoint

__all__: list[str] = []

FILE = "mariadb-bin.000007"
POS = 1234
GTIDS = {0: GtidTriple(0, 1, 100), 1: GtidTriple(1, 2, 7)}
TEXT = "0-1-100,1-2-7"


@dataclass(frozen=True, slots=True)
class _Reference:
    """What Checkpoint was before it became lazy: a frozen pair."""

    position: FilePos
    gtid_state: Gtid


def _public(
    file: str = FILE, pos: int = POS, gtids: dict[int, GtidTriple] | None = None
) -> Checkpoint:
    return Checkpoint(FilePos(file, pos), Gtid.from_domains(GTIDS if gtids is None else gtids))


def _lazy(
    file: str = FILE, pos: int = POS, gtids: dict[int, GtidTriple] | None = None
) -> Checkpoint:
    return Checkpoint._at(file, pos, dict(GTIDS if gtids is None else gtids), None)


_MAKERS: dict[str, Callable[..., Checkpoint]] = {"public": _public, "lazy": _lazy}


def _expected_repr(position: FilePos, state: Gtid) -> str:
    return f"Checkpoint(position={position!r}, gtid_state={state!r})"


def test_public_constructor_round_trip() -> None:
    position = FilePos(FILE, POS)
    state = Gtid(TEXT)
    cp = Checkpoint(position, state)
    assert cp.position is position
    assert cp.gtid_state is state
    by_name = Checkpoint(position=position, gtid_state=state)
    assert by_name.position is position and by_name.gtid_state is state
    assert by_name == cp
    again = Checkpoint(cp.position, cp.gtid_state)
    assert again == cp and hash(again) == hash(cp)


@pytest.mark.parametrize(
    "gtids",
    [
        GTIDS,
        {1: GtidTriple(1, 2, 7), 0: GtidTriple(0, 1, 100)},  # inserted out of order
        {},
        {7: GtidTriple(7, 2**32 - 1, 2**64 - 1)},
    ],
)
def test_at_builds_position_and_state(gtids: dict[int, GtidTriple]) -> None:
    cp = Checkpoint._at(FILE, POS, gtids, None)
    state = cp.gtid_state
    assert type(state) is Gtid
    assert state == Gtid.from_domains(gtids)
    assert state == Gtid(",".join(str(t) for t in gtids.values()))
    assert cp.gtid_state is state  # built once
    position = cp.position
    assert type(position) is FilePos
    assert position == FilePos(FILE, POS)
    assert cp.position is position


def test_at_with_the_state_already_built() -> None:
    state = Gtid(TEXT)
    cp = Checkpoint._at(FILE, POS, GTIDS, state)
    assert cp.gtid_state is state
    assert cp == _public()


@pytest.mark.parametrize("read", ["nothing", "left", "right", "both"])
def test_public_and_at_are_equal_for_the_same_place(read: str) -> None:
    public, lazy = _public(), _lazy()
    if read in ("left", "both"):
        assert public.position == lazy.position
    if read in ("right", "both"):
        assert lazy.gtid_state == public.gtid_state
    assert public == lazy and lazy == public
    assert (public != lazy) is False and (lazy != public) is False
    assert public.same_as(lazy) and lazy.same_as(public)
    assert hash(public) == hash(lazy)
    assert len({public, lazy}) == 1
    assert {public: "x"}[lazy] == "x"
    # Two lazy ones: the same map, an equal map, an equal map in another order.
    same_map = Checkpoint._at(FILE, POS, GTIDS, None)
    assert Checkpoint._at(FILE, POS, GTIDS, None) == same_map
    assert lazy == same_map and hash(lazy) == hash(same_map)
    reordered = Checkpoint._at(FILE, POS, dict(reversed(GTIDS.items())), None)
    assert reordered == lazy and hash(reordered) == hash(lazy)


@pytest.mark.parametrize("left", sorted(_MAKERS))
@pytest.mark.parametrize("right", sorted(_MAKERS))
@pytest.mark.parametrize(
    "change",
    [
        {"file": "mariadb-bin.000008"},
        {"pos": POS + 1},
        {"pos": 4},
        {"gtids": {0: GtidTriple(0, 1, 101), 1: GtidTriple(1, 2, 7)}},  # one seq_no
        {"gtids": {0: GtidTriple(0, 3, 100), 1: GtidTriple(1, 2, 7)}},  # one server_id
        {"gtids": {0: GtidTriple(0, 1, 100)}},  # a domain fewer
        {"gtids": {**GTIDS, 2: GtidTriple(2, 1, 1)}},  # a domain more
        {"gtids": {}},
    ],
    ids=lambda c: next(iter(c)) + "=" + str(next(iter(c.values()))),
)
def test_same_as_is_false_when_anything_differs(
    left: str, right: str, change: dict[str, object]
) -> None:
    a = _MAKERS[left]()
    b = _MAKERS[right](**change)
    assert not a.same_as(b) and not b.same_as(a)
    assert a != b and b != a
    assert not a == b  # noqa: SIM201  (== itself, not just !=)
    assert len({a, b}) == 2
    assert (a.position, a.gtid_state) != (b.position, b.gtid_state)


def test_not_equal_to_other_types() -> None:
    cp = _lazy()
    assert cp != (cp.position, cp.gtid_state)
    assert cp != _Reference(cp.position, cp.gtid_state)
    assert cp != None  # noqa: E711
    assert cp.__eq__(object()) is NotImplemented


@pytest.mark.parametrize("kind", sorted(_MAKERS))
@pytest.mark.parametrize("read_first", [False, True])
def test_attributes_cannot_be_assigned(kind: str, read_first: bool) -> None:
    cp = _MAKERS[kind]()
    if read_first:
        assert cp.position == FilePos(FILE, POS)
        assert cp.gtid_state == Gtid(TEXT)
    for name in ("position", "gtid_state"):
        with pytest.raises(AttributeError):
            setattr(cp, name, None)
        with pytest.raises(AttributeError):
            delattr(cp, name)
    with pytest.raises(AttributeError):
        cp.other = 1  # type: ignore[attr-defined]
    assert not hasattr(cp, "__dict__")
    assert cp.position == FilePos(FILE, POS)
    assert cp.gtid_state == Gtid(TEXT)


@pytest.mark.parametrize("kind", sorted(_MAKERS))
def test_repr_shows_position_and_state(kind: str) -> None:
    cp = _MAKERS[kind]()
    expected = _expected_repr(FilePos(FILE, POS), Gtid(TEXT))
    assert repr(cp) == expected
    assert repr(cp) == repr(_Reference(FilePos(FILE, POS), Gtid(TEXT))).replace(
        "_Reference(", "Checkpoint(", 1
    )
    assert "FilePos(file='mariadb-bin.000007', pos=1234)" in repr(cp)
    assert "Gtid(text='0-1-100,1-2-7')" in repr(cp)
    empty = _MAKERS[kind](gtids={})
    assert repr(empty) == _expected_repr(FilePos(FILE, POS), Gtid(""))


@pytest.mark.parametrize("kind", sorted(_MAKERS))
def test_copies_and_pickles_are_equal(kind: str) -> None:
    cp = _MAKERS[kind]()
    for twin in (copy.copy(cp), copy.deepcopy(cp), pickle.loads(pickle.dumps(cp))):
        assert type(twin) is Checkpoint
        assert twin == cp and hash(twin) == hash(cp)
        assert repr(twin) == repr(cp)


# -- against the reference: random places, both constructors, any read order ---------------

_places = st.tuples(
    st.sampled_from(["mysql-bin.000001", "mysql-bin.000002"]),
    st.sampled_from([4, 256, 2**32, 2**64 - 1]),
    st.dictionaries(
        st.integers(0, 2),
        st.tuples(st.integers(1, 2), st.integers(0, 2)),
        max_size=3,
    ).map(lambda d: {dom: GtidTriple(dom, sid, seq) for dom, (sid, seq) in d.items()}),
)


def _build(kind: bool, file: str, pos: int, gtids: dict[int, GtidTriple]) -> Checkpoint:
    if kind:
        return Checkpoint._at(file, pos, gtids, None)
    return Checkpoint(FilePos(file, pos), Gtid.from_domains(gtids))


@settings(max_examples=400, deadline=None)
@given(
    a=_places,
    b=_places,
    lazy_a=st.booleans(),
    lazy_b=st.booleans(),
    read=st.sampled_from(["none", "a", "b", "both"]),
)
def test_behaves_like_a_frozen_pair(
    a: tuple[str, int, dict[int, GtidTriple]],
    b: tuple[str, int, dict[int, GtidTriple]],
    lazy_a: bool,
    lazy_b: bool,
    read: str,
) -> None:
    cp_a, cp_b = _build(lazy_a, *a), _build(lazy_b, *b)
    ref_a = _Reference(FilePos(a[0], a[1]), Gtid.from_domains(a[2]))
    ref_b = _Reference(FilePos(b[0], b[1]), Gtid.from_domains(b[2]))
    if read in ("a", "both"):
        assert (cp_a.position, cp_a.gtid_state) == (ref_a.position, ref_a.gtid_state)
    if read in ("b", "both"):
        assert repr(cp_b).startswith("Checkpoint(")
    same = ref_a == ref_b
    assert (cp_a == cp_b) is same and (cp_b == cp_a) is same
    assert (cp_a != cp_b) is not same
    assert cp_a.same_as(cp_b) is same and cp_b.same_as(cp_a) is same
    if same:
        assert hash(cp_a) == hash(cp_b)
    assert cp_a.position == ref_a.position and cp_b.position == ref_b.position
    assert cp_a.gtid_state == ref_a.gtid_state and cp_b.gtid_state == ref_b.gtid_state
    assert repr(cp_a) == _expected_repr(ref_a.position, ref_a.gtid_state)
    assert repr(cp_b) == _expected_repr(ref_b.position, ref_b.gtid_state)
