"""SPDY/3.1 framing, the server side of what kubectl's port-forward speaks (moby/spdystream).

kubectl 1.31+ sends it inside WebSocket binary messages (subprotocol
``SPDY/3.1+portforward.k8s.io``, client-go's ``tools/portforward/tunneling_dialer.go``) and falls
back to a plain ``Upgrade: SPDY/3.1``; either way the byte stream is the same: control frames
(SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE) and data
frames, header blocks compressed with zlib and the SPDY/3 dictionary (one compression context
per direction for the whole connection).

The client opens every stream; the server answers each SYN_STREAM with a SYN_REPLY (as
apimachinery's ``spdy/connection.go`` does), echoes PINGs, and sends data frames and FINs.
spdystream does no flow control, so WINDOW_UPDATE and SETTINGS are read and ignored.
"""

from __future__ import annotations

import asyncio
import struct
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
FLAG_FIN = 0x01
MAX_FRAME = 1 << 24  # 24-bit length field
RST_CANCEL = 5

# The SPDY/3 header compression dictionary (draft-mbelshe-httpbis-spdy-00 §2.6.10.1), byte for
# byte as spdystream's spdy/dictionary.go (BSD, The Go Authors) has it; sha256 51d27341...407f02.
DICTIONARY = (
    b"\x00\x00\x00\x07options\x00\x00\x00\x04head\x00\x00\x00\x04post\x00\x00\x00\x03put\x00\x00\x00\x06de"
    b"lete\x00\x00\x00\x05trace\x00\x00\x00\x06accept\x00\x00\x00\x0eaccept-charset\x00\x00\x00\x0faccept-"
    b"encoding\x00\x00\x00\x0faccept-language\x00\x00\x00\raccept-ranges\x00\x00\x00\x03age\x00\x00\x00"
    b"\x05allow\x00\x00\x00\rauthorization\x00\x00\x00\rcache-control\x00\x00\x00\nconnection\x00\x00\x00"
    b"\x0ccontent-base\x00\x00\x00\x10content-encoding\x00\x00\x00\x10content-language\x00\x00\x00\x0econt"
    b"ent-length\x00\x00\x00\x10content-location\x00\x00\x00\x0bcontent-md5\x00\x00\x00\rcontent-range\x00"
    b"\x00\x00\x0ccontent-type\x00\x00\x00\x04date\x00\x00\x00\x04etag\x00\x00\x00\x06expect\x00\x00\x00"
    b"\x07expires\x00\x00\x00\x04from\x00\x00\x00\x04host\x00\x00\x00\x08if-match\x00\x00\x00\x11if-modifi"
    b"ed-since\x00\x00\x00\rif-none-match\x00\x00\x00\x08if-range\x00\x00\x00\x13if-unmodified-since\x00"
    b"\x00\x00\rlast-modified\x00\x00\x00\x08location\x00\x00\x00\x0cmax-forwards\x00\x00\x00\x06pragma"
    b"\x00\x00\x00\x12proxy-authenticate\x00\x00\x00\x13proxy-authorization\x00\x00\x00\x05range\x00\x00"
    b"\x00\x07referer\x00\x00\x00\x0bretry-after\x00\x00\x00\x06server\x00\x00\x00\x02te\x00\x00\x00\x07tr"
    b"ailer\x00\x00\x00\x11transfer-encoding\x00\x00\x00\x07upgrade\x00\x00\x00\nuser-agent\x00\x00\x00"
    b"\x04vary\x00\x00\x00\x03via\x00\x00\x00\x07warning\x00\x00\x00\x10www-authenticate\x00\x00\x00\x06me"
    b"thod\x00\x00\x00\x03get\x00\x00\x00\x06status\x00\x00\x00\x06200 OK\x00\x00\x00\x07version\x00\x00"
    b"\x00\x08HTTP/1.1\x00\x00\x00\x03url\x00\x00\x00\x06public\x00\x00\x00\nset-cookie\x00\x00\x00\nkeep-"
    b"alive\x00\x00\x00\x06origin1001012012022052063003023033043053063074024054064074084094104114124134144"
    b"15416417502504505203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request"
    b"401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Un"
    b"availableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun"
    b", GMTchunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plai"
    b"n,text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0"
    b".")


class SpdyError(Exception):
    """The peer broke the framing: the session ends (GOAWAY with PROTOCOL_ERROR)."""


@dataclass
class Stream:
    """One client-opened stream: its headers, what arrives on it (b"" once the client sent FIN)."""

    id: int
    headers: dict[str, str]
    inbox: asyncio.Queue[bytes] = field(default_factory=asyncio.Queue)
    remote_closed: bool = False
    local_closed: bool = False
    reset: bool = False

    async def read(self) -> bytes:
        return await self.inbox.get()


class Session:
    """The server end of one SPDY connection. ``feed`` it the client's bytes; it calls ``on_stream``
    for each new stream and writes frames through ``send``."""

    def __init__(self, send: Callable[[bytes], Awaitable[None]], on_stream: Callable[[Stream], None]) -> None:
        self._send = send
        self._on_stream = on_stream
        self._buf = bytearray()
        self._inflate = zlib.decompressobj(zdict=DICTIONARY)
        self._deflate = zlib.compressobj(zdict=DICTIONARY)
        self.streams: dict[int, Stream] = {}
        self.closed = asyncio.Event()
        self._lock = asyncio.Lock()
        self._last_stream = 0
        self._pending: list[bytes] = []

    # --- reading ----------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        self._buf.extend(data)
        while len(self._buf) >= 8:
            length = int.from_bytes(self._buf[5:8], "big")
            if len(self._buf) < 8 + length:
                return
            frame = bytes(self._buf[:8 + length])
            del self._buf[:8 + length]
            if frame[0] & 0x80:
                self._control(frame)
            else:
                self._data(frame)

    def _control(self, frame: bytes) -> None:
        version = ((frame[0] & 0x7F) << 8) | frame[1]
        kind = (frame[2] << 8) | frame[3]
        flags = frame[4]
        body = frame[8:]
        if version != VERSION:
            raise SpdyError(f"unsupported SPDY version {version}")
        if kind == SYN_STREAM:
            stream_id = struct.unpack(">I", body[:4])[0] & 0x7FFFFFFF
            headers = self._headers(body[10:])
            stream = Stream(stream_id, headers, remote_closed=bool(flags & FLAG_FIN))
            self.streams[stream_id] = stream
            self._last_stream = max(self._last_stream, stream_id)
            # Reply before anything else is sent on the stream: spdystream drops data that comes first.
            self._pending.append(self._frame(SYN_REPLY, 0, struct.pack(">I", stream_id) + self._block({})))
            if stream.remote_closed:
                stream.inbox.put_nowait(b"")
            self._on_stream(stream)
        elif kind == RST_STREAM:
            stream_id = struct.unpack(">I", body[:4])[0] & 0x7FFFFFFF
            stream = self.streams.pop(stream_id, None)
            if stream is not None:
                stream.reset = stream.local_closed = True
                if not stream.remote_closed:
                    stream.remote_closed = True
                    stream.inbox.put_nowait(b"")
        elif kind == PING:
            self._pending.append(frame)  # a client's ping: the same frame back
        elif kind == GOAWAY:
            self.closed.set()
        elif kind == HEADERS:
            self._headers(body[4:])  # keeps the decompression context in step
        # SETTINGS, WINDOW_UPDATE: spdystream keeps no flow-control state worth answering.

    def _data(self, frame: bytes) -> None:
        stream_id = struct.unpack(">I", frame[:4])[0] & 0x7FFFFFFF
        flags = frame[4]
        stream = self.streams.get(stream_id)
        if stream is None or stream.remote_closed:
            return
        if len(frame) > 8:
            stream.inbox.put_nowait(frame[8:])
        if flags & FLAG_FIN:
            stream.remote_closed = True
            stream.inbox.put_nowait(b"")

    def _headers(self, block: bytes) -> dict[str, str]:
        try:
            raw = self._inflate.decompress(block)
        except zlib.error as exc:
            raise SpdyError(f"bad header block: {exc}") from None
        headers: dict[str, str] = {}
        try:
            count = struct.unpack(">I", raw[:4])[0]
            pos = 4
            for _ in range(count):
                n = struct.unpack(">I", raw[pos:pos + 4])[0]
                name = raw[pos + 4:pos + 4 + n].decode()
                pos += 4 + n
                v = struct.unpack(">I", raw[pos:pos + 4])[0]
                value = raw[pos + 4:pos + 4 + v].decode()
                pos += 4 + v
                headers[name.lower()] = value.split("\x00")[0]
        except (struct.error, UnicodeDecodeError) as exc:
            raise SpdyError(f"bad header block: {exc}") from None
        return headers

    # --- writing ----------------------------------------------------------------------------

    def _block(self, headers: dict[str, str]) -> bytes:
        raw = struct.pack(">I", len(headers))
        for k, v in headers.items():
            raw += struct.pack(">I", len(k)) + k.encode() + struct.pack(">I", len(v)) + v.encode()
        return self._deflate.compress(raw) + self._deflate.flush(zlib.Z_SYNC_FLUSH)

    @staticmethod
    def _frame(kind: int, flags: int, body: bytes) -> bytes:
        return struct.pack(">HHI", 0x8000 | VERSION, kind, (flags << 24) | len(body)) + body

    async def flush(self) -> None:
        """Send what the frames read so far call for (SYN_REPLYs, PING echoes)."""
        async with self._lock:
            while self._pending:
                await self._send(self._pending.pop(0))

    async def write(self, stream: Stream, data: bytes, fin: bool = False) -> None:
        if stream.local_closed or stream.reset:
            return
        await self.flush()
        async with self._lock:
            for i in range(0, max(len(data), 1), MAX_FRAME - 1):
                chunk = data[i:i + MAX_FRAME - 1]
                last = i + MAX_FRAME - 1 >= len(data)
                flags = FLAG_FIN if fin and last else 0
                await self._send(struct.pack(">II", stream.id, (flags << 24) | len(chunk)) + chunk)
            if fin:
                stream.local_closed = True

    async def close_stream(self, stream: Stream) -> None:
        if not stream.local_closed:
            await self.write(stream, b"", fin=True)

    async def goaway(self) -> None:
        async with self._lock:
            await self._send(self._frame(GOAWAY, 0, struct.pack(">II", self._last_stream, 0)))
