"""How stored values become bytes: msgpack, with registered codecs for other types.

Natively: None, bool, int, float, str, bytes, dict, and tuples. Arrays decode as
tuples (monoid partials are tuples), so a list is stored as a tuple. Integers
beyond 64 bits, ``Fraction`` and ``Decimal`` are built in; anything else needs
:func:`register` (an unknown type is refused when stored, an unknown code when
read: never a silent wrong value). Nothing here can run code from the store.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import Any, Callable

import msgpack

from kvs.base import StoreError

_ENCODERS: dict[type, tuple[int, Callable[[Any], bytes]]] = {}
_DECODERS: dict[int, Callable[[bytes], Any]] = {}

#: Ext codes below this are the library's own; users register 32..127.
USER_CODES = 32
_BIGINT = 1


def register(cls: type, code: int, encode: Callable[[Any], bytes], decode: Callable[[bytes], Any]) -> None:
    """Store instances of exactly ``cls`` as msgpack ext type ``code`` (32..127 for users).

    ``encode`` turns an instance into bytes and ``decode`` turns them back; use
    :func:`pack` / :func:`unpack` inside them for nested values.
    """
    if not isinstance(code, int) or not 0 <= code <= 127:
        raise ValueError(f"ext code must be an int in 0..127, got {code!r}")
    owner = next((c for c, (k, _) in _ENCODERS.items() if k == code), None)
    if owner is not None and owner is not cls:
        raise ValueError(f"ext code {code} is already registered for {owner.__qualname__}")
    _ENCODERS[cls] = (code, encode)
    _DECODERS[code] = decode


def _default(value: Any) -> msgpack.ExtType:
    if type(value) is int:  # msgpack holds 64 bits; wider ones come here
        return msgpack.ExtType(_BIGINT, str(value).encode())
    entry = _ENCODERS.get(type(value))
    if entry is None:
        raise TypeError(f"cannot store a {type(value).__qualname__} ({value!r}): "
                        "register a codec with kvs.codec.register(cls, code, encode, decode)")
    code, encode = entry
    return msgpack.ExtType(code, encode(value))


def _ext_hook(code: int, data: bytes) -> Any:
    decode = _DECODERS.get(code)
    if decode is None:
        raise StoreError(f"stored value has msgpack ext type {code}, which no codec is registered for")
    return decode(data)


def pack(value: Any) -> bytes:
    """``value`` as bytes (TypeError naming the type if it has no codec)."""
    return msgpack.packb(value, default=_default, use_bin_type=True)


def unpack(data: bytes) -> Any:
    """The value :func:`pack` made; StoreError if ``data`` is not such a value."""
    try:
        return msgpack.unpackb(data, ext_hook=_ext_hook, use_list=False, raw=False, strict_map_key=False)
    except StoreError:
        raise
    except Exception as error:  # msgpack raises several unrelated types on garbage
        raise StoreError(f"stored value is not valid msgpack ({type(error).__name__}: {error})") from None


register(Fraction, 2, lambda f: pack((f.numerator, f.denominator)), lambda b: Fraction(*unpack(b)))
register(Decimal, 3, lambda d: str(d).encode(), lambda b: Decimal(b.decode()))
_DECODERS[_BIGINT] = lambda b: int(b.decode())


def unpack_chunks(data: bytes) -> list[Any]:
    """The values of concatenated packed sequences (a block written chunk by chunk), in order."""
    unpacker = msgpack.Unpacker(ext_hook=_ext_hook, use_list=False, raw=False, strict_map_key=False)
    unpacker.feed(data)
    out: list[Any] = []
    try:
        for chunk in unpacker:
            out += chunk
    except StoreError:
        raise
    except Exception as error:
        raise StoreError(f"stored block is not valid msgpack ({type(error).__name__}: {error})") from None
    if unpacker.tell() != len(data):
        raise StoreError(f"stored block is truncated ({unpacker.tell()} of {len(data)} bytes readable)")
    return out


def registered(cls: type) -> bool:
    """Whether instances of exactly ``cls`` have a codec (:func:`register`)."""
    return cls in _ENCODERS
