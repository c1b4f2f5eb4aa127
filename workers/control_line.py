"""A worker's control line: its own subscription to its control channel, on a socket opened
here, so that the descriptor can sit in execute's poll() beside the child's pidfd (redis-py
keeps its connection's socket private). It speaks just enough RESP2 to subscribe: AUTH, then
SUBSCRIBE, then it only reads. Each opening asks where Redis is (through Sentinel, the primary
of the moment), so a line lost to a failover reopens on the new primary.
"""

import socket
import ssl

import redis
from redis.connection import SSLConnection

from workers.shared.redis_client import address

CONNECT_TIMEOUT_S = 5.0
_CRLF = b"\r\n"


class LineDown(Exception):
    """The control line is closed or could not be opened; messages may go unheard."""


class ControlLine:
    def __init__(self, url: str, channel: str) -> None:
        self.url, self.channel = url, channel
        self.sock: socket.socket | None = None
        self.buffer = b""

    def fileno(self) -> int | None:
        """The descriptor to wait on, or None while the line is down."""
        return self.sock.fileno() if self.sock is not None else None

    def messages(self, reopen: bool = True) -> list[str]:
        """Every message already here, never blocking; opens the line when it is down (and
        `reopen`). Raises LineDown when it cannot be read (then it is closed)."""
        sock = self.sock or (self._open() if reopen else None)
        if sock is None:
            raise LineDown("the control line is down")
        try:
            while chunk := _read_ready(sock):
                self.buffer += chunk
        except OSError as error:
            self.close()
            raise LineDown(f"control line lost: {error}") from None
        return [str(frame[2]) for frame in self._frames()
                if isinstance(frame, list) and frame[:1] == ["message"]]

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
        self.sock, self.buffer = None, b""

    def _open(self) -> socket.socket:
        sock = None
        try:
            options = address(self.url)  # through Sentinel: the primary of the moment
            sock = _connect(options)
            password = options.get("password")
            if password:
                user = options.get("username")
                sock.sendall(_command("AUTH", *([user] if user else []), password))
                self._expect(sock, "OK")
            sock.sendall(_command("SUBSCRIBE", self.channel))
            self._expect(sock, ["subscribe", self.channel, 1])
        except (OSError, ValueError, redis.RedisError) as error:
            if sock is not None:
                sock.close()
            self.buffer = b""
            raise LineDown(f"cannot open the control line: {error}") from None
        sock.setblocking(False)
        self.sock = sock
        return sock

    def _expect(self, sock: socket.socket, reply: object) -> None:
        while not (frames := self._frames(limit=1)):
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("Redis closed the connection")
            self.buffer += chunk
        if frames[0] != reply:
            raise ValueError(f"Redis answered {frames[0]!r}")

    def _frames(self, limit: int | None = None) -> list[object]:
        frames: list[object] = []
        while limit is None or len(frames) < limit:
            parsed = _parse(self.buffer, 0)
            if parsed is None:
                break
            frame, used = parsed
            frames.append(frame)
            self.buffer = self.buffer[used:]
        return frames


def _connect(options: dict[str, object]) -> socket.socket:
    if "path" in options:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(CONNECT_TIMEOUT_S)
        sock.connect(str(options["path"]))
        return sock
    host = str(options.get("host", "127.0.0.1"))
    sock = socket.create_connection((host, int(str(options.get("port", 6379)))),
                                    timeout=CONNECT_TIMEOUT_S)
    if options.get("connection_class") is not SSLConnection:
        return sock
    context = ssl.create_default_context(cafile=options.get("ssl_ca_certs"))  # type: ignore[arg-type]
    if options.get("ssl_certfile"):
        context.load_cert_chain(str(options["ssl_certfile"]), options.get("ssl_keyfile"))  # type: ignore[arg-type]
    if str(options.get("ssl_cert_reqs", "required")).lower() in ("none", "0"):
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    return context.wrap_socket(sock, server_hostname=host)


def _read_ready(sock: socket.socket) -> bytes:
    """What the socket holds now (b"" when nothing is waiting); OSError when it closed."""
    try:
        chunk = sock.recv(65536)
    except (BlockingIOError, ssl.SSLWantReadError):
        return b""
    if not chunk:
        raise ConnectionError("Redis closed the connection")
    return chunk


def _command(*args: str) -> bytes:
    parts = [f"*{len(args)}".encode()]
    for arg in args:
        data = arg.encode()
        parts += [f"${len(data)}".encode(), data]
    return _CRLF.join(parts) + _CRLF


def _parse(buffer: bytes, at: int) -> tuple[object, int] | None:
    """One RESP2 value from `buffer[at:]` and where it ends; None while it is incomplete."""
    end = buffer.find(_CRLF, at)
    if end < 0:
        return None
    kind, line = buffer[at:at + 1], buffer[at + 1:end].decode()
    if kind == b"+":
        return line, end + 2
    if kind == b"-":
        return ValueError(line), end + 2
    if kind == b":":
        return int(line), end + 2
    if kind == b"$":
        size = int(line)
        if size < 0:
            return None, end + 2
        if len(buffer) < end + 2 + size + 2:
            return None
        return buffer[end + 2:end + 2 + size].decode(errors="replace"), end + 2 + size + 2
    if kind == b"*":
        items, at = [], end + 2
        for _ in range(int(line)):
            parsed = _parse(buffer, at)
            if parsed is None:
                return None
            items.append(parsed[0])
            at = parsed[1]
        return items, at
    raise ValueError(f"not a RESP2 reply: {buffer[at:at + 40]!r}")
