"""A child Python process that hangs says where: its threads' stacks in the failure."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: Seconds a child has to dump its stacks and die once sent SIGABRT.
DUMP_SECONDS = 30


def run_or_dump_stacks(
    args: Sequence[str], *, timeout: float, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(args, capture_output=True, text=True)``, except that a child
    still running after ``timeout`` seconds is sent SIGABRT, on which Python's fault
    handler (``PYTHONFAULTHANDLER``) writes every thread's stack to stderr; the
    AssertionError raised then holds the end of that stderr."""
    env = {**(os.environ if env is None else env), "PYTHONFAULTHANDLER": "1"}
    with subprocess.Popen(
        list(args), cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as child:
        try:
            out, err = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGABRT)
            try:
                _, err = child.communicate(timeout=DUMP_SECONDS)
            except subprocess.TimeoutExpired:
                child.kill()
                _, err = child.communicate()
            raise AssertionError(
                f"still running after {timeout} s: {' '.join(args)}\n"
                f"its stacks at SIGABRT, and the end of its log:\n{err[-8000:]}"
            ) from None
    return subprocess.CompletedProcess(list(args), child.returncode, out, err)


def stop_child(child: subprocess.Popen[Any], seconds: float) -> None:
    """SIGTERM ``child``, and SIGKILL it if it has not exited ``seconds`` later."""
    child.terminate()
    try:
        child.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
