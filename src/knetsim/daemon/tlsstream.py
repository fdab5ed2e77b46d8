"""Byte streams for the Gateway listeners: a plain socket stream, and TLS over it with the ClientHello read first.

A Gateway port chooses what answers the TLS handshake from the ClientHello's SNI — the proxy with a
listener's certificate, or (passthrough) the backend pod's own TLS server — so the ClientHello has to
be read before any certificate is chosen. ``client_hello`` parses the server name and ALPN offers out
of the first record (RFC 8446 §4.1.2, RFC 6066 §3, RFC 7301); ``TLSStream`` then runs Python's TLS
(``ssl.SSLObject`` over memory BIOs) with those bytes fed back in, so the client sees one ordinary
handshake.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from dataclasses import dataclass

READ_SIZE = 65536
HANDSHAKE_TIMEOUT = 10.0
LINGER = 2.0  # how long a refused handshake waits for the client to close


class PlainStream:
    """An asyncio stream with bytes already read put back in front."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, initial: bytes = b"") -> None:
        self.reader, self.writer = reader, writer
        self._pending = initial

    def unread(self, data: bytes) -> None:
        self._pending = data + self._pending

    async def recv(self, n: int = READ_SIZE) -> bytes:
        if self._pending:
            data, self._pending = self._pending[:n], self._pending[n:]
            return data
        return await self.reader.read(n)

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    def peer(self) -> tuple[str, int]:
        info = self.writer.get_extra_info("peername")
        return (str(info[0]), int(info[1])) if info else ("", 0)

    async def close(self) -> None:
        if not self.writer.is_closing():
            self.writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self.writer.wait_closed()

    async def linger(self, seconds: float = LINGER) -> None:
        """Half-close and read what the client still sends until it closes: closing a socket with unread bytes
        resets the connection, and the reset can reach the client before the alert it must read (a TLS 1.3
        client sends its request right after its Finished, before the server has judged its certificate)."""
        with contextlib.suppress(ConnectionError, OSError, RuntimeError, AttributeError):
            if self.writer.can_write_eof():
                self.writer.write_eof()

            async def drain() -> None:
                while await self.reader.read(READ_SIZE):
                    pass

            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(drain(), seconds)


@dataclass(frozen=True, slots=True)
class ClientHello:
    sni: str | None
    alpn: tuple[str, ...]


class NotTLS(ValueError):
    """The first bytes are no TLS handshake record."""


async def read_client_hello(stream: PlainStream) -> tuple[ClientHello, bytes]:
    """Read the first TLS record (a ClientHello) and parse it; the bytes go back to the caller to replay."""
    data = b""
    while len(data) < 5:
        chunk = await stream.recv()
        if not chunk:
            raise NotTLS("the connection closed before a TLS record")
        data += chunk
    if data[0] != 0x16:
        raise NotTLS("the first bytes are not a TLS handshake")
    length = int.from_bytes(data[3:5], "big")
    while len(data) < 5 + length:
        chunk = await stream.recv()
        if not chunk:
            raise NotTLS("the connection closed inside the ClientHello")
        data += chunk
    return client_hello(data[5:5 + length]), data


def client_hello(body: bytes) -> ClientHello:
    """The server_name and ALPN extensions of a ClientHello handshake message (unknown fields are skipped)."""
    try:
        if body[0] != 0x01:
            raise NotTLS("the first handshake message is not a ClientHello")
        pos = 4 + 2 + 32  # handshake header, legacy_version, random
        pos += 1 + body[pos]  # legacy_session_id
        pos += 2 + int.from_bytes(body[pos:pos + 2], "big")  # cipher_suites
        pos += 1 + body[pos]  # legacy_compression_methods
        if pos >= len(body):
            return ClientHello(None, ())
        end = pos + 2 + int.from_bytes(body[pos:pos + 2], "big")
        pos += 2
        sni: str | None = None
        alpn: list[str] = []
        while pos + 4 <= end:
            ext_type = int.from_bytes(body[pos:pos + 2], "big")
            ext_len = int.from_bytes(body[pos + 2:pos + 4], "big")
            ext = body[pos + 4:pos + 4 + ext_len]
            pos += 4 + ext_len
            if ext_type == 0 and len(ext) >= 5 and ext[2] == 0:  # server_name, host_name
                name_len = int.from_bytes(ext[3:5], "big")
                sni = ext[5:5 + name_len].decode("ascii", "replace").lower()
            elif ext_type == 16 and len(ext) >= 2:  # application_layer_protocol_negotiation
                i = 2
                while i < len(ext):
                    n = ext[i]
                    alpn.append(ext[i + 1:i + 1 + n].decode("ascii", "replace"))
                    i += 1 + n
        return ClientHello(sni, tuple(alpn))
    except IndexError:
        raise NotTLS("a truncated ClientHello") from None


class TLSStream:
    """The server side of TLS over a PlainStream (Python's ssl, driven through memory BIOs)."""

    def __init__(self, inner: PlainStream, context: ssl.SSLContext) -> None:
        self.inner = inner
        self._in, self._out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.obj = context.wrap_bio(self._in, self._out, server_side=True)

    async def _flush(self) -> None:
        data = self._out.read()
        if data:
            await self.inner.send(data)

    async def handshake(self, replay: bytes) -> None:
        """Complete the handshake, ``replay`` being the bytes already read (the ClientHello). Raises
        ssl.SSLError (the alert was sent) or ConnectionError."""
        self._in.write(replay)

        async def run() -> None:
            while True:
                try:
                    self.obj.do_handshake()
                    await self._flush()
                    return
                except ssl.SSLWantReadError:
                    await self._flush()
                    data = await self.inner.recv()
                    if not data:
                        raise ConnectionResetError("the client closed the connection during the handshake") from None
                    self._in.write(data)
                except ssl.SSLError:
                    await self._flush()  # the alert
                    await self.inner.linger()
                    raise

        await asyncio.wait_for(run(), HANDSHAKE_TIMEOUT)

    @property
    def alpn(self) -> str | None:
        return self.obj.selected_alpn_protocol()

    def peer_chain_der(self) -> list[bytes]:
        cert = self.obj.getpeercert(binary_form=True)
        return [cert] if cert else []

    @property
    def version(self) -> str | None:
        return self.obj.version()

    @property
    def cipher(self) -> str | None:
        info = self.obj.cipher()
        return info[0] if info else None

    async def recv(self, n: int = READ_SIZE) -> bytes:
        while True:
            try:
                return self.obj.read(n)
            except ssl.SSLWantReadError:
                data = await self.inner.recv()
                if not data:
                    return b""
                self._in.write(data)
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                return b""

    async def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = self.obj.write(view)
            view = view[written:]
            await self._flush()

    def peer(self) -> tuple[str, int]:
        return self.inner.peer()

    async def close(self) -> None:
        try:
            self.obj.unwrap()
            await self._flush()
        except (ssl.SSLError, ValueError, ConnectionError, OSError):
            pass
        await self.inner.close()
