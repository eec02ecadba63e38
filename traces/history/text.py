"""The bytes of a history file, as every trace reader takes them: plain, gzip or zstd (told by
the first bytes, traces.io), read in chunks; a failure to decompress names the file and the line
reached."""
from __future__ import annotations

from ...errors import UserError

CHUNK = 1 << 20


def chunks(path):
    """Yield the decompressed bytes of `path` ("-": standard input) chunk by chunk."""
    from ...traces.io import _decompressing, _open_raw

    fh, head, owned = _open_raw(path)
    try:
        stream, _ = _decompressing(path, fh, head)
        while True:
            try:
                data = stream.read(CHUNK)
            except Exception as exc:  # noqa: BLE001 - _CompressedDataError, OSError
                raise UserError(str(exc), file=path) from None
            if not data:
                return
            yield data
    finally:
        if owned:
            fh.close()


def decode(raw: bytes) -> tuple[str | None, str | None]:
    """(text, None), or (None, what is wrong) when `raw` is not UTF-8: never replaced silently."""
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, (f"not UTF-8: byte 0x{raw[exc.start]:02x} at byte {exc.start + 1} of the record "
                      f"({exc.reason})")


class Unreadable(str):
    """What an adapter's record reader yields in place of a record it cannot read: why."""
