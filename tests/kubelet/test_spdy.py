"""SPDY/3.1 framing as spdystream (kubectl's port-forward client) writes and reads it.

Given frames built the way spdystream builds them (control frames with zlib-compressed header
blocks over the SPDY/3 dictionary, one compression context per direction), the server session
names each stream by its headers, replies to it, echoes pings and carries data both ways.
"""

from __future__ import annotations

import asyncio
import struct
import zlib

from knetsim.kubelet.spdy import DICTIONARY, FLAG_FIN, PING, SYN_REPLY, SYN_STREAM, Session, Stream


class Client:
    def __init__(self) -> None:
        self.deflate = zlib.compressobj(zdict=DICTIONARY)
        self.inflate = zlib.decompressobj(zdict=DICTIONARY)

    def syn_stream(self, stream_id: int, headers: dict[str, str], fin: bool = False) -> bytes:
        raw = struct.pack(">I", len(headers)) + b"".join(
            struct.pack(">I", len(k)) + k.encode() + struct.pack(">I", len(v)) + v.encode() for k, v in headers.items())
        block = self.deflate.compress(raw) + self.deflate.flush(zlib.Z_SYNC_FLUSH)
        body = struct.pack(">IIBB", stream_id, 0, 0, 0) + block
        return struct.pack(">HHI", 0x8003, SYN_STREAM, ((FLAG_FIN if fin else 0) << 24) | len(body)) + body

    @staticmethod
    def data(stream_id: int, payload: bytes, fin: bool = False) -> bytes:
        return struct.pack(">II", stream_id, ((FLAG_FIN if fin else 0) << 24) | len(payload)) + payload


def frames(data: bytes) -> list[tuple[str, int, int, bytes]]:
    out = []
    while data:
        length = int.from_bytes(data[5:8], "big")
        frame, data = data[:8 + length], data[8 + length:]
        if frame[0] & 0x80:
            out.append(("control", (frame[2] << 8) | frame[3], frame[4], frame[8:]))
        else:
            out.append(("data", struct.unpack(">I", frame[:4])[0], frame[4], frame[8:]))
    return out


def test_streams_replies_pings_and_data() -> None:
    async def go() -> tuple[list[Stream], list[tuple[str, int, int, bytes]], bytes, bytes]:
        sent = bytearray()
        streams: list[Stream] = []

        async def send(data: bytes) -> None:
            sent.extend(data)
        session = Session(send, streams.append)
        client = Client()
        # The client's frames may arrive split anywhere: feed them a byte at a time.
        wire = (client.syn_stream(1, {"streamtype": "error", "port": "80", "requestid": "0"}, fin=True)
                + client.syn_stream(3, {"streamtype": "data", "port": "80", "requestid": "0"})
                + client.data(3, b"GET / HTTP/1.1\r\n\r\n")
                + struct.pack(">HHI", 0x8003, PING, 4) + struct.pack(">I", 1)
                + client.data(3, b"", fin=True))
        for i in range(len(wire)):
            session.feed(wire[i:i + 1])
        await session.flush()
        await session.write(streams[1], b"HTTP/1.1 200 OK\r\n\r\n", fin=True)
        first = await streams[1].read()
        eof = await streams[1].read()
        return streams, frames(bytes(sent)), first, eof
    streams, out, first, eof = asyncio.run(go())
    assert [(s.id, s.headers["streamtype"], s.remote_closed) for s in streams] == [
        (1, "error", True), (3, "data", True)]
    assert (first, eof) == (b"GET / HTTP/1.1\r\n\r\n", b"")
    kinds = [(k, t) for k, t, _f, _b in out]
    assert kinds == [("control", SYN_REPLY), ("control", SYN_REPLY), ("control", PING), ("data", 3)]
    assert struct.unpack(">I", out[2][3])[0] == 1  # the ping's id, echoed
    inflate = zlib.decompressobj(zdict=DICTIONARY)
    for _kind, _type, _flags, body in out[:2]:
        assert inflate.decompress(body[4:]) == b"\x00\x00\x00\x00"  # no headers, as apimachinery replies
    assert out[3][2] == FLAG_FIN and out[3][3] == b"HTTP/1.1 200 OK\r\n\r\n"
