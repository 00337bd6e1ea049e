"""An expert behind an OpenAI-compatible chat-completions endpoint.

POST {base_url}/chat/completions with {"model", "messages", "max_tokens",
"temperature"} and read choices[0].message.content. DeepSeek, OpenAI, Claude through
an OpenAI-compatible gateway, vLLM / llama.cpp / Ollama servers all speak this.
Standard library only (urllib).

Failure policy: the expert never raises for its backend. Connection errors,
timeouts, 429 and 5xx are retried `max_retries` times with exponential backoff
(backoff_s * backoff_factor**attempt, capped at max_backoff_s; a numeric
Retry-After header is honoured up to the same cap); other 4xx, malformed JSON or a
response without text give "" at once. Each failure is logged with
`logging.warning`; the API key is read from the environment variable named by
`api_key_env` at request time and never logged or cached.

Cache: successful answers are cached by a hash of (endpoint, model, messages,
max_tokens, temperature) in memory and, with `cache_path`, in an SQLite file shared
across runs. Failures are not cached.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import hashlib
import http.client
import json
import logging
import os
import sqlite3
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Sequence

from mtrl.envs.code.experts.base import (EXPERT_SYSTEM_PROMPT, Expert, ExpertRequest,
                                         build_expert_prompt)
from mtrl.envs.code.task import CodeTask

logger = logging.getLogger(__name__)

_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
_RETRY_STATUS = frozenset({408, 429}) | frozenset(range(500, 600))


@dataclasses.dataclass(frozen=True)
class OpenAIExpertConfig:
    base_url: str  # e.g. "https://api.deepseek.com/v1", "http://127.0.0.1:8000/v1"
    model: str  # e.g. "deepseek-coder", "gpt-4o-mini"
    api_key_env: str | None = "OPENAI_API_KEY"  # name of the variable, never the key
    timeout_s: float = 60.0  # per HTTP attempt (connect + read)
    max_retries: int = 3  # extra attempts after the first, for retryable failures
    backoff_s: float = 1.0
    backoff_factor: float = 2.0
    max_backoff_s: float = 30.0
    max_tokens: int = 512
    temperature: float = 0.0
    system_prompt: str = EXPERT_SYSTEM_PROMPT
    cache_path: str | None = None  # SQLite file for the response cache; None: memory only
    max_workers: int = 4  # concurrent requests in suggest_batch
    max_suggestion_chars: int = 4000

    def __post_init__(self):
        scheme = urllib.parse.urlsplit(self.base_url).scheme
        if scheme not in ("http", "https"):
            raise ValueError(f"base_url must be an http(s) URL, got {self.base_url!r}")
        if not self.model:
            raise ValueError("model must be non-empty")
        if self.timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {self.timeout_s}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if self.backoff_s < 0 or self.backoff_factor < 1 or self.max_backoff_s < 0:
            raise ValueError("need backoff_s >= 0, backoff_factor >= 1, max_backoff_s >= 0")
        if self.max_tokens < 1 or self.max_workers < 1 or self.max_suggestion_chars < 1:
            raise ValueError("max_tokens, max_workers and max_suggestion_chars must be positive")

    @property
    def endpoint(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"


class _Retryable(Exception):
    def __init__(self, reason: str, retry_after: float | None = None):
        super().__init__(reason)
        self.retry_after = retry_after


class _Fatal(Exception):
    pass


class OpenAICompatibleExpert(Expert):
    def __init__(self, config: OpenAIExpertConfig):
        self.config = config
        host = urllib.parse.urlsplit(config.base_url).hostname or ""
        # A local server must never be reached through an environment proxy.
        handlers = [urllib.request.ProxyHandler({})] if host in _LOOPBACK_HOSTS else []
        self._opener = urllib.request.build_opener(*handlers)
        self._lock = threading.Lock()
        self._memory: dict[str, str] = {}
        self._db: sqlite3.Connection | None = None
        if config.cache_path:
            self._db = sqlite3.connect(config.cache_path, check_same_thread=False)
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT)")
            self._db.commit()
        self.requests_sent = 0  # HTTP attempts made, for logging and tests
        self.cache_hits = 0

    def suggest(self, task: CodeTask, program_code: str, feedback_text: str, *,
                all_passed: bool | None = None) -> str:
        del all_passed  # the model judges for itself
        return self.complete(build_expert_prompt(task, program_code, feedback_text))

    def suggest_batch(self, requests: Sequence[ExpertRequest]) -> list[str]:
        prompts = [build_expert_prompt(r.task, r.program_code, r.feedback_text)
                   for r in requests]
        unique = list(dict.fromkeys(prompts))  # identical branches: one request
        if len(unique) <= 1 or self.config.max_workers == 1:
            answers = {prompt: self.complete(prompt) for prompt in unique}
        else:
            with concurrent.futures.ThreadPoolExecutor(
                    max_workers=min(self.config.max_workers, len(unique)),
                    thread_name_prefix="mtrl-expert") as pool:
                answers = dict(zip(unique, pool.map(self.complete, unique)))
        return [answers[prompt] for prompt in prompts]

    def complete(self, user_prompt: str) -> str:
        """The model's answer to one user message; "" on any failure (logged)."""
        cfg = self.config
        messages = ([{"role": "system", "content": cfg.system_prompt}] if cfg.system_prompt
                    else []) + [{"role": "user", "content": user_prompt}]
        body = {"model": cfg.model, "messages": messages, "max_tokens": cfg.max_tokens,
                "temperature": cfg.temperature}
        key = hashlib.sha256(json.dumps([cfg.endpoint, body], sort_keys=True).encode()).hexdigest()
        cached = self._cache_get(key)
        if cached is not None:
            with self._lock:
                self.cache_hits += 1
            return cached
        payload = json.dumps(body).encode("utf-8")
        for attempt in range(cfg.max_retries + 1):
            try:
                text = self._post(payload)
            except _Fatal as error:
                logger.warning("expert request to %s failed: %s; using no suggestion",
                               cfg.endpoint, error)
                return ""
            except _Retryable as error:
                if attempt == cfg.max_retries:
                    logger.warning("expert request to %s failed after %d attempts: %s; "
                                   "using no suggestion", cfg.endpoint, attempt + 1, error)
                    return ""
                delay = min(cfg.backoff_s * cfg.backoff_factor ** attempt, cfg.max_backoff_s)
                if error.retry_after is not None:
                    delay = min(max(delay, error.retry_after), cfg.max_backoff_s)
                logger.info("expert request to %s: %s; retrying in %.2fs", cfg.endpoint,
                            error, delay)
                time.sleep(delay)
                continue
            text = text[: cfg.max_suggestion_chars].strip()
            self._cache_put(key, text)
            return text
        return ""  # unreachable: the loop returns on its last attempt

    def _post(self, payload: bytes) -> str:
        cfg = self.config
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        api_key = os.environ.get(cfg.api_key_env) if cfg.api_key_env else None
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        request = urllib.request.Request(cfg.endpoint, data=payload, headers=headers,
                                         method="POST")
        with self._lock:
            self.requests_sent += 1
        try:
            with self._opener.open(request, timeout=cfg.timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            if error.code in _RETRY_STATUS:
                raise _Retryable(f"HTTP {error.code}", _retry_after(error.headers)) from None
            raise _Fatal(f"HTTP {error.code}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError,
                http.client.HTTPException, OSError) as error:
            reason = getattr(error, "reason", error)
            raise _Retryable(f"{type(error).__name__}: {reason}") from None
        return _parse_content(raw)

    def _cache_get(self, key: str) -> str | None:
        with self._lock:
            if key in self._memory:
                return self._memory[key]
            if self._db is not None:
                row = self._db.execute("SELECT value FROM responses WHERE key = ?",
                                       (key,)).fetchone()
                if row is not None:
                    self._memory[key] = row[0]
                    return row[0]
        return None

    def _cache_put(self, key: str, value: str) -> None:
        with self._lock:
            self._memory[key] = value
            if self._db is not None:
                self._db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?)", (key, value))
                self._db.commit()

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


def _retry_after(headers: Any) -> float | None:
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


def _parse_content(raw: bytes) -> str:
    """choices[0].message.content of a chat-completions response (text parts joined)."""
    try:
        data = json.loads(raw.decode("utf-8", errors="replace"))
        content = data["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as error:
        raise _Fatal(f"malformed response ({type(error).__name__}): "
                     f"{raw[:120]!r}") from None
    if isinstance(content, list):  # some gateways return content parts
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    if not isinstance(content, str):
        raise _Fatal(f"response content is {type(content).__name__}, not text")
    return content
