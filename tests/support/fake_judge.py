"""A real OpenAI-compatible HTTP server on a loopback port, for the judge's tests and benchmark.

It answers ``POST /v1/chat/completions``. Its *honest* grade of a prompt is scripted: ``SCORE:<x>`` (the
first in the prompt, i.e. the question's) gives ``x``; ``NOSCORE`` gets a reply without a score; otherwise
``7``. How it writes that grade is its ``style``, the judge behaviours of the red-team suite:

- ``plain``: ``Reasonable. [[x]]``;
- ``echo``: quotes its whole input, then grades; ``echo_cut``: quotes its whole input and stops there (a
  judge cut off at its token limit before it graded);
- ``grade_then_quote``: writes ``[[x]]`` first, then quotes the response; ``quote_then_grade``: the reverse;
- ``json``: honours ``response_format`` with a JSON schema, answering ``{"reasoning": ..., "score": x}``
  where the reasoning quotes the response; asked without one, it writes like ``quote_then_grade``.

So an injection in a completion can raise its score only through the judge's quoting. The response quoted
is the one between the judge's fence (``<<<RESPONSE n>>> ... <<<END n>>>``), else after the old template's
``[Response]`` header, else the whole prompt; ``quote_fence`` quotes the boundary lines too. ``normalise``
quotes it as a model that reads past disguises would (:func:`normalised`): base64 decoded, compatibility
forms folded, marks and invisible characters dropped, every script's digits written in ASCII.

It can be told to be slow, to answer a scripted series of statuses (429 with Retry-After, 500, 401, ...), to
send garbage, to hang, to pad its replies (or its scripted error bodies, streamed) to a size, or to refuse
``response_format`` with a 400, and it counts requests, the most requests in flight at once, the bytes of
error bodies it got to send, the sizes of the images it received, the paths requested, and (apart, in
``probes``) the judge's verdict-mode probes.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import re
import sys
import threading
import time
import unicodedata
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: a judge's verdict-mode probe carries this tag in its prompt; the fake counts probes apart
PROBE_TAG = "rewardkit-verdict-probe"
STYLES = ("plain", "echo", "echo_cut", "grade_then_quote", "quote_then_grade", "json")
_FENCED = re.compile(r"<<<RESPONSE (\w+)>>>\n(.*?)\n<<<END \1>>>", re.DOTALL)
_ANY_FENCE = re.compile(r"<<<\w+ (\w+)>>>\n(.*?)\n<<<END \1>>>", re.DOTALL)
_BASE64 = re.compile(r"[A-Za-z0-9+/]{16,}={0,2}")


class _Server(ThreadingHTTPServer):
    request_queue_size = 256  # socketserver's default backlog of 5 drops connections opened 64 at a time

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client that gave up: nothing to report
            super().handle_error(request, client_address)


class FakeJudge:
    def __init__(self, style: str = "plain", quote_fence: bool = False, normalise: bool = False) -> None:
        self.style = style  # how it writes its grade (STYLES); reset() keeps it
        self.quote_fence = quote_fence  # quote the response with its boundary lines
        self.normalise = normalise  # quote the response as read past its disguises (normalised())
        self.delay_s = 0.0
        self.script: list[tuple[int, dict[str, str]]] = []  # (status, headers) answered first, in order
        self.mode = "ok"  # ok | garbage | hang
        self.reply_bytes = 0  # pad each reply's text to at least this many bytes
        self.error_bytes = 0  # a scripted error's body: this many bytes, streamed until the client hangs up
        self.error_bytes_sent = 0  # of those, what the client took before it hung up
        self.paths: list[str] = []  # the path (with its query) of every request, probes included
        self.reject_response_format = False  # answer 400 to a request carrying response_format
        self.probes = 0  # the judge's verdict-mode probes, not counted in requests
        self.response_formats: list[Any] = []  # the response_format of every request (None when absent)
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.image_sizes: list[tuple[int, int]] = []
        self.times: list[float] = []
        self.authorizations: list[str] = []
        self.texts: list[str] = []  # the text of every prompt received
        self.image_urls: list[str] = []  # every image URL received (data: URLs included)
        self._lock = threading.Lock()
        self._release = threading.Event()  # set by reset(): hung handlers return at once
        judge = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                with judge._lock:
                    judge.paths.append(self.path)
                if PROBE_TAG in json.dumps(body.get("messages")):
                    with judge._lock:
                        judge.probes += 1
                    judge._answer(self, body, probe=True)
                    return
                judge._enter(self.headers.get("authorization", ""))
                try:
                    judge._answer(self, body)
                finally:
                    judge._leave()

            def log_message(self, *args: object) -> None:
                pass

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False  # a handler told to hang must not hold up close()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def plain_texts(self) -> list[str]:
        """``texts`` as the template and values read without the judge's fence: the note before the
        template dropped and each fenced value in place of its boundary lines."""
        return [unfenced(text) for text in self.texts]

    def reset(self) -> None:
        """A clean slate for the next test: requests still in flight from the last one (hung handlers,
        calls a cancelled batch left behind, sent but not yet accepted) finish first, so they are not
        counted against it: it waits until none is in flight and none came in for 50 ms."""
        self._release.set()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (
            self.in_flight or (self.times and time.monotonic() - self.times[-1] < 0.05)
        ):
            time.sleep(0.01)
        self._release.clear()
        with self._lock:
            self.delay_s, self.script, self.mode = 0.0, [], "ok"
            self.reply_bytes, self.reject_response_format = 0, False
            self.error_bytes = self.error_bytes_sent = 0
            self.paths = []
            self.probes, self.response_formats = 0, []
            self.requests = self.max_in_flight = 0
            self.image_sizes, self.times, self.authorizations = [], [], []
            self.texts, self.image_urls = [], []

    def close(self) -> None:
        self._release.set()
        self.server.shutdown()
        self.server.server_close()

    def _enter(self, authorization: str) -> None:
        with self._lock:
            self.requests += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.times.append(time.monotonic())
            self.authorizations.append(authorization)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _answer(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], probe: bool = False) -> None:
        with self._lock:  # the scripted statuses are for the calls a test counts, not for probes
            scripted = self.script.pop(0) if self.script and not probe else None
        if scripted is not None and scripted[0] != 200:
            status, headers = scripted
            if self.error_bytes:
                self._stream_error(handler, status)
                return
            self._send(handler, status, {"error": {"message": f"scripted {status}", "type": "test"}}, headers)
            return
        if self.mode == "hang":
            self._release.wait(3600)
            return  # the client gave up long ago: answer nothing
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.mode == "garbage":
            raw = b"<html>not json</html>"
            handler.send_response(200)
            handler.send_header("content-type", "application/json")
            handler.send_header("content-length", str(len(raw)))
            handler.end_headers()
            handler.wfile.write(raw)
            return
        text = ""
        for message in body.get("messages", []):
            content = message.get("content")
            if isinstance(content, str):
                text += content
            else:
                for part in content or []:
                    if part.get("type") == "text":
                        text += part["text"]
                    elif part.get("type") == "image_url":
                        self._record_image(part["image_url"]["url"])
        response_format = body.get("response_format")
        if not probe:
            with self._lock:
                self.texts.append(text)
                self.response_formats.append(response_format)
        if response_format is not None and self.reject_response_format:
            message = "response_format is not supported"
            self._send(handler, 400, {"error": {"message": message, "type": "invalid_request_error"}})
            return
        reply = self.reply(text, response_format)
        if len(reply.encode()) < self.reply_bytes:
            reply += " " + "x" * (self.reply_bytes - len(reply.encode()))
        self._send(
            handler,
            200,
            {
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "judge"),
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            },
        )

    def reply(self, prompt: str, response_format: Any = None) -> str:
        """What this judge answers to ``prompt``: its scripted grade, written in its style."""
        match = re.search(r"SCORE:(-?[\d.]+)", prompt)
        grade = match.group(1) if match else "7"
        if "NOSCORE" in prompt:
            return "No score from me."
        quote = _response_in(prompt, self.quote_fence)
        if self.normalise:
            quote = normalised(quote)
        if self.style == "json" and _json_schema(response_format):
            return json.dumps({"reasoning": f"The response reads: {quote}", "score": float(grade)})
        if self.style == "echo":
            return f"You asked me:\n{prompt}\n\nMy grade: [[{grade}]]"
        if self.style == "echo_cut":
            return f"You asked me:\n{prompt}"
        if self.style == "grade_then_quote":
            return f"[[{grade}]]\n\nThe response I graded reads:\n{quote}"
        if self.style in ("quote_then_grade", "json"):
            return f"The response reads:\n{quote}\n\nMy grade: [[{grade}]]"
        return f"Reasonable. [[{grade}]]"

    def _stream_error(self, handler: BaseHTTPRequestHandler, status: int) -> None:
        """An error whose body is ``error_bytes`` long: a JSON error, then padding, written 1 MiB at a time
        while the client reads (``error_bytes_sent`` counts what it took)."""
        head = json.dumps({"error": {"message": f"scripted {status}", "type": "test"}}).encode()
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(self.error_bytes))
        handler.end_headers()
        chunk = head + b" " * ((1 << 20) - len(head))
        left = self.error_bytes
        try:
            while left > 0:
                part = chunk[: min(left, len(chunk))]
                handler.wfile.write(part)
                left -= len(part)
                with self._lock:
                    self.error_bytes_sent += len(part)
                chunk = b" " * (1 << 20)
        except OSError:  # the client hung up: what it read is counted
            handler.close_connection = True

    def _record_image(self, url: str) -> None:
        from PIL import Image

        with self._lock:
            self.image_urls.append(url)
        if url.startswith("data:"):
            image = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
            with self._lock:
                self.image_sizes.append(image.size)

    @staticmethod
    def _send(
        handler: BaseHTTPRequestHandler,
        status: int,
        payload: dict[str, Any],
        headers: dict[str, str] | None = None,
    ) -> None:
        raw = json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.send_header("content-length", str(len(raw)))
        handler.end_headers()
        handler.wfile.write(raw)


def unfenced(prompt: str) -> str:
    """A prompt without the judge's fence (its opening note, and each value's boundary lines)."""
    if _ANY_FENCE.search(prompt) and "\n\n" in prompt:
        prompt = prompt.split("\n\n", 1)[1]
    return _ANY_FENCE.sub(lambda match: match.group(2), prompt)


def normalised(text: str) -> str:
    """``text`` as a judge that reads past disguises quotes it: each base64 run that decodes to text
    decoded, then NFKD, then every mark (accents, overlays, variation selectors, keycaps) and every invisible
    character (format, control other than spacing, unassigned, private use) dropped, and every decimal
    digit of any script written in ASCII."""

    def decoded(match: re.Match[str]) -> str:
        try:
            plain = base64.b64decode(match.group(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return match.group()
        return plain if plain.isprintable() else match.group()

    out = []
    for char in unicodedata.normalize("NFKD", _BASE64.sub(decoded, text)):
        kind = unicodedata.category(char)
        if kind[0] == "M" or (kind[0] == "C" and not char.isspace()):
            continue
        out.append(str(unicodedata.decimal(char)) if kind == "Nd" else char)
    return "".join(out)


def _response_in(prompt: str, with_fence: bool = False) -> str:
    """The response a judge quotes: inside the fence (with its boundary lines or not), else after the old
    ``[Response]`` header."""
    fenced = _FENCED.search(prompt)
    if fenced:
        return fenced.group(0 if with_fence else 2)
    start = prompt.find("[Response]\n")
    if start < 0:
        return prompt
    end = prompt.rfind("\n\nWrite a short justification")
    return prompt[start + len("[Response]\n") : end if end > start else None]


def _json_schema(response_format: Any) -> bool:
    return isinstance(response_format, dict) and response_format.get("type") == "json_schema"


def asgi_app(delay_s: float) -> Any:
    """The same protocol as an asyncio app, for the benchmark: served by uvicorn like vLLM's own server."""
    import asyncio

    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def completions(request: Request) -> JSONResponse:
        body = await request.json()
        await asyncio.sleep(delay_s)
        text = "".join(m["content"] for m in body["messages"] if isinstance(m.get("content"), str))
        match = re.search(r"SCORE:(-?[\d.]+)", text)
        reply = f"Reasonable. [[{match.group(1) if match else 7}]]"
        message = {"role": "assistant", "content": reply}
        return JSONResponse(
            {
                "id": "chatcmpl-bench",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "judge"),
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            }
        )

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])


def main() -> None:
    """Serve the asyncio variant with uvicorn on a free port; print the base URL; stop when stdin closes."""
    import argparse
    import socket

    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=0.0)
    args = parser.parse_args()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = uvicorn.Config(
        asgi_app(args.delay), host="127.0.0.1", port=port, log_level="warning", backlog=512
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    print(f"http://127.0.0.1:{port}/v1", flush=True)
    sys.stdin.read()  # until the parent closes our stdin
    server.should_exit = True
    thread.join(10)


if __name__ == "__main__":
    main()
