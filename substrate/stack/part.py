"""A part of the local stack: a process started on loopback with its state in SUBSTRATE_HOME.

Each concrete part says how to install itself, what command runs it and how to tell it is
healthy; this base class does the rest (pid files, stale pids, port checks, start timeout with
the log tail, stop).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from substrate.errors import StackError
from substrate.settings import Settings

Progress = Callable[[str], None]


def _print(msg: str) -> None:
    print(msg, flush=True)


@dataclass
class PartStatus:
    name: str
    running: bool
    healthy: bool
    pid: int | None
    address: str
    version: str | None = None
    detail: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


def who_listens(port: int) -> str:
    """Best-effort description of the process listening on a TCP port (from /proc)."""
    try:
        out = subprocess.run(
            ["ss", "-ltnpH", f"sport = :{port}"], capture_output=True, text=True, timeout=5
        ).stdout.strip()
        return out or "an unknown process"
    except (OSError, subprocess.SubprocessError):
        return "an unknown process"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is not alive
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return True


def tail(path: Path, lines: int = 30) -> str:
    if not path.exists():
        return "(no log yet)"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


class Part:
    """Base class: subclasses set ``name`` and implement the abstract hooks."""

    name = "part"
    start_timeout = 60.0

    def __init__(self, settings: Settings, progress: Progress = _print) -> None:
        self.settings = settings
        self.progress = progress

    # --- hooks -------------------------------------------------------------------------
    def ports(self) -> list[int]:
        raise NotImplementedError

    def address(self) -> str:
        raise NotImplementedError

    def install(self) -> None:
        """Make sure binaries / jars / data directories exist (may download, with progress)."""

    def command(self) -> list[str]:
        raise NotImplementedError

    def environment(self) -> dict[str, str]:
        return dict(os.environ)

    def check(self) -> str:
        """Return the version when healthy; raise any exception when not."""
        raise NotImplementedError

    def after_start(self) -> None:
        """Run once after the part first became healthy (e.g. set a password)."""

    def run_as(self) -> str | None:
        """System user to run the process as (None: the current user)."""
        return None

    def identity(self) -> dict[str, Any]:
        """subprocess arguments that switch to ``run_as()`` — user, its group, and no
        supplementary groups (root's group would otherwise decide folder access)."""
        user = self.run_as()
        if user is None:
            return {}
        return {"user": user, "group": user, "extra_groups": []}

    # --- managed ------------------------------------------------------------------------
    @property
    def pid_file(self) -> Path:
        return self.settings.run_dir / f"{self.name}.pid"

    @property
    def log_file(self) -> Path:
        return self.settings.log_dir / f"{self.name}.log"

    def pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        if pid_alive(pid):
            return pid
        self.pid_file.unlink(missing_ok=True)  # stale pid file after a crash
        return None

    def status(self) -> PartStatus:
        pid = self.pid()
        try:
            version = self.check()
            return PartStatus(self.name, pid is not None, True, pid, self.address(), version)
        except Exception as exc:  # noqa: BLE001 - any failure means "not healthy"
            return PartStatus(
                self.name, pid is not None, False, pid, self.address(), None, str(exc)[:300]
            )

    @contextlib.contextmanager
    def _start_lock(self) -> Iterator[None]:
        """Serialise starts of this part across processes (two `up` runs at once)."""
        self.settings.run_dir.mkdir(parents=True, exist_ok=True)
        with (self.settings.run_dir / f"{self.name}.start.lock").open("a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def start(self) -> bool:
        """Start the part unless it is already healthy. Returns True when it was started."""
        if self.status().healthy:
            return False
        with self._start_lock():
            if self.status().healthy:
                return False  # another `up` started it while we waited for the lock
            return self._start()

    def _start(self) -> bool:
        if self.pid() is not None:
            self.stop()  # alive but unhealthy: restart it
        for port in self.ports():
            if port_in_use(port):
                raise StackError(
                    f"{self.name}: port {port} is already taken by {who_listens(port)}; "
                    f"stop that process or set a different port in the environment",
                    {"part": self.name, "port": port},
                )
        self.install()
        for d in (self.settings.run_dir, self.settings.log_dir):
            d.mkdir(parents=True, exist_ok=True)
        self.progress(f"[{self.name}] starting: log {self.log_file}")
        with self.log_file.open("ab") as log:
            proc = subprocess.Popen(
                self.command(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.environment(),
                start_new_session=True,
                **self.identity(),
            )
        self.pid_file.write_text(str(proc.pid))
        self._wait_healthy(proc)
        self.after_start()
        self.progress(f"[{self.name}] healthy at {self.address()}")
        return True

    def _wait_healthy(self, proc: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + self.start_timeout
        last = ""
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                self._forget(proc.pid)
                raise StackError(
                    f"{self.name} exited with code {proc.returncode} while starting; "
                    f"last lines of {self.log_file}:\n{tail(self.log_file)}"
                )
            try:
                self.check()
                return
            except Exception as exc:  # noqa: BLE001
                last = str(exc)
            time.sleep(0.5)
        # the reason again after the log tail: a CI run may show only the output's last lines
        raise StackError(
            f"{self.name} did not become healthy within {self.start_timeout:.0f}s ({last}); "
            f"last lines of {self.log_file}:\n{tail(self.log_file)}\n"
            f"{self.name} did not become healthy: {last}"
        )

    def _forget(self, pid: int) -> None:
        """Remove the pid file if it still names ``pid`` (never another process's file)."""
        with contextlib.suppress(OSError):
            if self.pid_file.read_text().strip() == str(pid):
                self.pid_file.unlink()

    def stop(self, timeout: float = 30.0) -> bool:
        pid = self.pid()
        if pid is None:
            return False
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and pid_alive(pid):
            time.sleep(0.2)
        if pid_alive(pid):
            os.killpg(pid, signal.SIGKILL)
        self.pid_file.unlink(missing_ok=True)
        self.progress(f"[{self.name}] stopped")
        return True
