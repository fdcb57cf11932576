"""How a handle's method becomes a sync or an async call, written once.

A method of a handle is written as an operation (:mod:`shopsearch_client._core`) and decorated:

- :class:`operation`: on a handle of a :class:`Client` the method returns the answer, on one of an
  :class:`AsyncClient` an awaitable of it;
- :class:`paginated`: the method returns a page fetcher; the call becomes an iterator over every
  item of every page (an async iterator on the async client);
- ``_handles.scoped`` (beside the replace session it opens): the method returns the operation that opens it; the call becomes a
  context manager (an async one on the async client) that commits on success and aborts on error.

The decorators' ``__get__`` overloads tell a type checker which of the two a handle gives: handles
are generic in :class:`Sync` or :class:`Async`.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar, overload

from shopsearch_client._core import Op
from shopsearch_client.retry import RetryPolicy

P = ParamSpec("P")
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class Mode:
    """What calls on a handle return: :class:`Sync` or :class:`Async`."""


class Sync(Mode):
    """Calls on the handle return their answers."""


class Async(Mode):
    """Calls on the handle return awaitables of their answers."""


IO = TypeVar("IO", bound=Mode)


class PageLike(Protocol[T_co]):
    @property
    def items(self) -> Sequence[T_co]: ...

    @property
    def next_cursor(self) -> str | None: ...


Fetch = Callable[[str | None], Op[PageLike[T]]]


@dataclass(frozen=True)
class Context(Generic[IO]):
    """What every handle of one client shares: the runner that performs operations, the retry policy."""

    runner: Any  # _runners.SyncRunner for Sync, _runners.AsyncRunner for Async
    retry: RetryPolicy


class Handle(Generic[IO]):
    _ctx: Context[IO]


class operation(Generic[P, T]):
    def __init__(self, fn: Callable[Concatenate[Any, P], Op[T]]) -> None:
        self.fn = fn
        self.__doc__ = fn.__doc__

    @overload
    def __get__(self, obj: None, owner: type) -> operation[P, T]: ...
    @overload
    def __get__(self, obj: Handle[Sync], owner: type) -> Callable[P, T]: ...
    @overload
    def __get__(self, obj: Handle[Async], owner: type) -> Callable[P, Awaitable[T]]: ...

    def __get__(self, obj: Any, owner: type) -> Any:
        if obj is None:
            return self
        fn, run = self.fn, obj._ctx.runner.run

        @functools.wraps(fn)
        def bound(*args: Any, **kwargs: Any) -> Any:
            return run(fn(obj, *args, **kwargs))

        return bound


class paginated(Generic[P, T]):
    def __init__(self, fn: Callable[Concatenate[Any, P], Fetch[T]]) -> None:
        self.fn = fn
        self.__doc__ = fn.__doc__

    @overload
    def __get__(self, obj: None, owner: type) -> paginated[P, T]: ...
    @overload
    def __get__(self, obj: Handle[Sync], owner: type) -> Callable[P, Iterator[T]]: ...
    @overload
    def __get__(self, obj: Handle[Async], owner: type) -> Callable[P, AsyncIterator[T]]: ...

    def __get__(self, obj: Any, owner: type) -> Any:
        if obj is None:
            return self
        fn, iterate = self.fn, obj._ctx.runner.iterate

        @functools.wraps(fn)
        def bound(*args: Any, **kwargs: Any) -> Any:
            return iterate(fn(obj, *args, **kwargs))

        return bound
