"""Runs a top-level script as `python script.py args...` does, from a Python that has already
imported TensorFlow: a forked copy of a warm interpreter instead of a new one.

Importing TensorFlow, Keras and the library takes about 5 s of CPU per process. The test suite
runs several dozen script commands whose own work is often about as long (tiny models, a few
steps), so a new interpreter for each would spend half their time starting up. Here one server
process per test worker imports `_quiet_start` (TensorFlow with its start-up lines hidden, as
every script does first) and the library, and runs no TensorFlow op, so that no thread pool,
device context or allocator exists yet. For each command it forks; the child takes the command's
environment, working directory and argv, sends its stdout and stderr to files, and runs the
script as `__main__` (runpy), with the script's folder first on sys.path as Python puts it. The
child's exit status is the script's: 0, SystemExit's code, or 1 with the traceback on stderr.
`atexit` handlers run before the child exits, as at a normal interpreter exit.

What differs from a new interpreter is only start-up: modules that the server imported are not
imported again, and TensorFlow read TF_CPP_MIN_LOG_LEVEL when the server loaded it. The tests
that check start-up itself (tests/test_quiet_start.py, the demo, kill and resume) start new
interpreters with subprocess.

Usage: `run_script(["run_classifier.py", "--task_name=MRPC", ...], env=..., cwd=...)` (or
`run_script(["-c", code, ...])`, as `python -c`) returns a
subprocess.CompletedProcess (returncode, stdout, stderr as text), like `subprocess.run(...,
capture_output=True, text=True)`.
"""

import atexit
import json
import os
import runpy
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import warnings

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run_child(request: dict) -> int:
    """In the forked child: the command's process state, then the script. Returns its status."""
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(target, fd)
        os.close(target)
    argv = request["argv"]
    try:
        if argv[0] == "-c":  # python -c CODE args: argv[0] is "-c", the working folder on path
            sys.argv = ["-c", *argv[2:]]
            sys.path[0] = ""
            exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
        elif argv[0] == "-m":  # python -m MODULE args
            sys.argv = [argv[1], *argv[2:]]
            sys.path[0] = os.getcwd()
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(argv)
            sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
            runpy.run_path(argv[0], run_name="__main__")
        status = 0
    except SystemExit as exit_request:
        code = exit_request.code
        if code is None:
            status = 0
        elif isinstance(code, int):
            status = code
        else:  # sys.exit("message"): printed, status 1, as the interpreter does
            print(code, file=sys.stderr)
            status = 1
    except BaseException:
        traceback.print_exc()
        status = 1
    try:
        atexit._run_exitfuncs()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    return status


def serve(preload: str = "library") -> None:
    """The server's loop: one JSON request per line on stdin, one JSON reply per line on the
    original stdout (kept on a private descriptor, since children write fd 1).

    preload: "library" (the scripts' start: `_quiet_start` and the library) or "serving"
    (tensorflow and tensorflow_text only, as a process that loads a serving SavedModel without
    this package: tests/export/fresh_process.py)."""
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # stray prints of the server go to stderr, never into the reply stream
    if preload == "serving":
        import tensorflow  # noqa: F401
        import tensorflow_text  # noqa: F401
    else:
        sys.path.insert(0, REPO_ROOT)
        saved_argv = sys.argv
        sys.argv = ["warm_interpreter"]  # _quiet_start reads argv for -v flags
        import _quiet_start  # noqa: F401  (TensorFlow, start-up lines hidden)
        import official_bert.kernels  # noqa: F401
        import official_bert.tasks.registry  # noqa: F401

        sys.argv = saved_argv
    replies.write(json.dumps({"ready": True}) + "\n")
    replies.flush()
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        with warnings.catch_warnings():
            # Python 3.12+ warns of fork() in a process with threads: TensorFlow's import
            # leaves one native thread, idle (no op has run), which the child does not need.
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:
            status = 1
            try:
                replies.close()
                stdin = os.open(os.devnull, os.O_RDONLY)
                os.dup2(stdin, 0)
                os.close(stdin)
                status = _run_child(request)
            finally:
                os._exit(status & 0xFF)
        replies.write(json.dumps({"pid": pid}) + "\n")
        replies.flush()
        _, wait_status = os.waitpid(pid, 0)
        replies.write(json.dumps({"returncode": os.waitstatus_to_exitcode(wait_status)}) + "\n")
        replies.flush()


class WarmInterpreter:
    """The client: starts the server on first use and keeps it for the test worker's life."""

    def __init__(self, preload: str = "library"):
        self.preload = preload
        self._server = None

    def _start(self):
        self._server = subprocess.Popen(
            [
                sys.executable,
                "-c",
                f"from tests.warm_interpreter import serve; serve({self.preload!r})",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO_ROOT,
            env=dict(os.environ, PYTHONPATH=REPO_ROOT),
        )
        ready = self._server.stdout.readline()
        if json.loads(ready or "{}") != {"ready": True}:
            raise RuntimeError(f"the warm interpreter did not start: {ready!r}")

    def _reply(self, deadline):
        """The server's next reply line; None once `deadline` (time.monotonic()) passes."""
        if deadline is not None:
            wait = max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self._server.stdout], [], [], wait)
            if not ready:
                return None
        line = self._server.stdout.readline()
        if not line:
            raise RuntimeError("the warm interpreter died")
        return json.loads(line)

    def start(self, argv, env=None, cwd=None) -> "WarmChild":
        """Starts `python argv...` in a forked child and returns at once (one child at a time:
        the server waits for it before it takes the next request)."""
        if self._server is None or self._server.poll() is not None:
            self._start()
        folder = tempfile.mkdtemp(prefix="warm_run_")
        request = {
            "argv": [str(a) for a in argv],
            "env": dict(os.environ if env is None else env),
            "cwd": str(cwd or REPO_ROOT),
            "stdout": os.path.join(folder, "stdout"),
            "stderr": os.path.join(folder, "stderr"),
        }
        self._server.stdin.write(json.dumps(request) + "\n")
        self._server.stdin.flush()
        return WarmChild(self, argv, request, folder, self._reply(None)["pid"])

    def run(self, argv, env=None, cwd=None, timeout=None) -> subprocess.CompletedProcess:
        child = self.start(argv, env=env, cwd=cwd)
        if child.wait(timeout) is None:  # as subprocess.run does at its timeout
            child.kill()
            child.wait()
            child.result()
            raise subprocess.TimeoutExpired(argv, timeout)
        return child.result()

    def close(self):
        if self._server is not None and self._server.poll() is None:
            self._server.stdin.close()
            self._server.wait(timeout=60)


class WarmChild:
    """A script running in a forked warm interpreter (WarmInterpreter.start), as a
    subprocess.Popen: pid, poll(), wait(), kill(); result() reads its output once it ended."""

    def __init__(self, interpreter, argv, request, folder, pid):
        self._interpreter = interpreter
        self.args = argv
        self._request = request
        self._folder = folder
        self.pid = pid
        self.returncode = None

    def wait(self, timeout=None):
        """The exit status; None if the child still runs after `timeout` seconds."""
        if self.returncode is None:
            deadline = None if timeout is None else time.monotonic() + timeout
            reply = self._interpreter._reply(deadline)
            if reply is not None:
                self.returncode = reply["returncode"]
        return self.returncode

    def poll(self):
        return self.wait(0)

    def kill(self):
        if self.returncode is None:
            os.kill(self.pid, signal.SIGKILL)

    def result(self) -> subprocess.CompletedProcess:
        outputs = []
        for name in ("stdout", "stderr"):
            with open(self._request[name], encoding="utf-8", errors="replace") as stream:
                outputs.append(stream.read())
        shutil.rmtree(self._folder, ignore_errors=True)
        return subprocess.CompletedProcess(self.args, self.returncode, outputs[0], outputs[1])


_INTERPRETERS = {preload: WarmInterpreter(preload) for preload in ("library", "serving")}
for _interpreter in _INTERPRETERS.values():
    atexit.register(_interpreter.close)


def run_script(
    argv, env=None, cwd=None, timeout=None, preload="library"
) -> subprocess.CompletedProcess:
    """`python argv[0] argv[1:]` (a path relative to cwd, default the repository; or `-c CODE`,
    `-m MODULE`) in a forked warm interpreter; see the module docstring. At `timeout` seconds the
    run is killed and subprocess.TimeoutExpired raised. Where os.fork does not exist (Windows),
    a new interpreter runs it. preload: what that interpreter imported, "library" or "serving"
    (see serve)."""
    if not hasattr(os, "fork"):
        return subprocess.run(
            [sys.executable, *map(str, argv)],
            env=env,
            cwd=cwd or REPO_ROOT,
            timeout=timeout,
            capture_output=True,
            text=True,
        )
    return _INTERPRETERS[preload].run(argv, env=env, cwd=cwd, timeout=timeout)


def start_script(argv, env=None, cwd=None) -> WarmChild:
    """run_script's command started in the library's warm interpreter without waiting for it
    (a run to kill): a WarmChild. The interpreter runs nothing else until the child ends."""
    return _INTERPRETERS["library"].start(argv, env=env, cwd=cwd)
